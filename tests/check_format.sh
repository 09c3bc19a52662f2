#!/usr/bin/env bash
# The C and C++ sources follow .clang-format (Google's style at 120 columns): lists every file
# clang-format would change, with the first lines it would change, and fails if there is one.
# Fix with: git ls-files '*.cc' '*.h' '*.c' '*.cu' '*.cuh' | xargs clang-format -i
# In a git tree it reads the tracked files and the untracked ones git does not ignore (a new file
# is checked before its `git add`); elsewhere every such file under the root.
set -u
root=${1:-$(dirname "$0")/..}
cd "$root" || exit 2
cf=$(command -v clang-format || command -v clang-format-14)
if [ -z "$cf" ]; then
  echo "check_format: clang-format is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
fail=0
while IFS= read -r f; do
  [ -f "$f" ] || continue  # tracked, deleted and not yet committed
  if ! "$cf" --style=file "$f" | cmp -s - "$f"; then
    echo "check_format: $f does not follow .clang-format:"
    "$cf" --style=file "$f" | diff "$f" - | head -8
    fail=1
  fi
done < <(git ls-files --cached --others --exclude-standard '*.cc' '*.h' '*.c' '*.cu' '*.cuh' 2>/dev/null ||
  find . -name '*.cc' -o -name '*.h' -o -name '*.c' -o -name '*.cu' -o -name '*.cuh')
[ $fail -eq 0 ] && echo "check_format: every C and C++ file follows .clang-format"
exit $fail
