/* Signal actions a program set survive hoop: installed before libhoop is loaded with dlopen (as
 * Python's are before `import hoop`), and before hoop_init starts a back end (UCX, libfabric's
 * providers install handlers of their own). SIGINT and SIGTERM have the program's handler,
 * SIGHUP is ignored, SIGQUIT keeps its default; after the dlopen and after hoop_init (over the
 * HOOP_TRANSPORT the job names) each must still be so, and a raised SIGINT must reach the
 * program's handler. argv[1]: the path of libhoop.so. Run as every rank of a job (hooprun).
 * Prints "c-signals ok rank R of N". */
#include <dlfcn.h>
#include <hoop/hoop.h> /* the version macros only: libhoop itself is loaded by dlopen */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*init_fn)(void**);
typedef int (*get_fn)(void*, int*);
typedef int (*final_fn)(void*);
typedef const char* (*err_fn)(void);

static volatile sig_atomic_t g_got;
static void Mine(int sig) { g_got = sig; }

static int Check(const char* when) {
  struct {
    int sig;
    void (*want)(int);
    const char* name;
  } expect[] = {
      {SIGINT, Mine, "SIGINT"}, {SIGTERM, Mine, "SIGTERM"}, {SIGHUP, SIG_IGN, "SIGHUP"}, {SIGQUIT, SIG_DFL, "SIGQUIT"}};
  for (size_t i = 0; i < sizeof expect / sizeof expect[0]; ++i) {
    struct sigaction sa;
    sigaction(expect[i].sig, NULL, &sa);
    if ((sa.sa_flags & SA_SIGINFO) || sa.sa_handler != expect[i].want) {
      printf("c-signals FAIL %s: %s's action is not the program's\n", when, expect[i].name);
      return 0;
    }
  }
  return 1;
}

int main(int argc, char** argv) {
  const char* usage =
      "usage: hoop-c-signals-test LIBHOOP\n"
      "  loads LIBHOOP (the path of libhoop.so) with dlopen and checks that the program's signal\n"
      "  actions survive it and hoop_init. Run as every rank of a job (hooprun).\n";
  if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    fputs(usage, stdout);
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "--version") == 0) {
    printf("hoop-c-signals-test (hoop) %d.%d.%d\n", HOOP_VERSION_MAJOR, HOOP_VERSION_MINOR, HOOP_VERSION_PATCH);
    return 0;
  }
  if (argc < 2) {
    fputs(usage, stderr);
    return 2;
  }
  signal(SIGINT, Mine);
  signal(SIGTERM, Mine);
  signal(SIGHUP, SIG_IGN);
  signal(SIGQUIT, SIG_DFL);
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (!lib) {
    printf("c-signals FAIL dlopen: %s\n", dlerror());
    return 1;
  }
  if (!Check("after loading libhoop")) return 1;
  init_fn init = (init_fn)dlsym(lib, "hoop_init_from_env");
  get_fn rank = (get_fn)dlsym(lib, "hoop_rank"), size = (get_fn)dlsym(lib, "hoop_size");
  final_fn finalize = (final_fn)dlsym(lib, "hoop_finalize");
  err_fn last = (err_fn)dlsym(lib, "hoop_last_error");
  void* comm = NULL;
  int r = -1, n = -1;
  if (!init || init(&comm) != 0 || rank(comm, &r) != 0 || size(comm, &n) != 0) {
    printf("c-signals FAIL hoop_init_from_env: %s\n", last ? last() : "no symbol");
    return 1;
  }
  if (!Check("after hoop_init")) return 1;
  raise(SIGINT);
  if (g_got != SIGINT) {
    printf("c-signals FAIL a raised SIGINT did not reach the program's handler\n");
    return 1;
  }
  if (finalize(comm) != 0) return 1;
  printf("c-signals ok rank %d of %d\n", r, n);
  return 0;
}
