#!/usr/bin/env bash
# The layering rule of DESIGN.md: common <- transport <- collectives <- tensorfusion <- trainer;
# tools, perf and fuzz sit on top, each with its own list below; python/ (the binding) sees only
# the C API (hoop/hoop.h). A folder
# may include only from itself and the folders below it, collectives/ never includes a
# transport back end (transport/tcp/, transport/shm/, ...), and nothing above collectives/
# includes the Communicator's implementation (core/comm_core.h, the executor, device/, the
# mailbox).
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2
fail=0
allowed() {
  case $1 in
    common) echo "common" ;;
    transport) echo "common transport" ;;
    collectives) echo "common transport collectives hoop" ;;
    tensorfusion) echo "common transport collectives tensorfusion hoop" ;;
    trainer) echo "common transport collectives tensorfusion trainer hoop" ;;
    python) echo "python hoop" ;;  # the Python binding: the C API only
    # On top: the tools (hooprun, hoop-info) use the library, never the trainer or the
    # benchmarks; perf/ measures everything, the trainer's layers included (hoop-bench-device);
    # the fuzzers drive the parsers of the layers below the trainer.
    tools) echo "common transport collectives tensorfusion tools hoop" ;;
    perf) echo "common transport collectives tensorfusion trainer perf hoop" ;;
    fuzz) echo "common transport collectives tensorfusion hoop" ;;
  esac
}
for layer in common transport collectives tensorfusion trainer python tools perf fuzz; do
  [ -d "$layer" ] || continue
  ok=$(allowed "$layer")
  while IFS= read -r line; do
    file=${line%%:*}
    inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"${line#*:}")
    top=${inc%%/*}
    if ! grep -qw -- "$top" <<<"$ok"; then
      echo "layering: $file includes \"$inc\" ($layer may include only: $ok)"
      fail=1
    fi
    # The Communicator's implementation stays behind its front (collectives/api/communicator.h):
    # above collectives/, none of the core's own headers.
    if [ "$layer" != collectives ] && [ "$layer" != transport ] && [ "$layer" != common ] &&
      grep -qE '^(collectives/core/(comm_core|executor|plan)|collectives/device/.*|transport/tagged/mailbox(_internal)?)\.h$' <<<"$inc"; then
      echo "layering: $file includes \"$inc\", the Communicator's implementation (use collectives/api/communicator.h)"
      fail=1
    fi
    if [ "$layer" = collectives ] && grep -qE '^transport/(tcp|shm|ucx|ofi|cuda)/' <<<"$inc"; then
      echo "layering: $file includes back end header \"$inc\"; collectives/ must go through transport/transport.h"
      fail=1
    fi
  done < <(grep -rHE '^#include "' "$layer" --include='*.h' --include='*.cc' --include='*.cu' 2>/dev/null)
done
[ $fail = 0 ] && echo "layering: ok"
exit $fail
