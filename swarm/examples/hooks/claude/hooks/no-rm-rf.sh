#!/bin/sh
# PreToolUse on Bash: exit 2 blocks the call, and stderr is what the model reads.
input=$(cat)
case "$input" in
  *'rm -rf'*|*'rm -fr'*)
    echo "Blocked by the project's no-rm-rf hook: do not delete directories; remove single files with rm instead." >&2
    exit 2 ;;
esac
exit 0
