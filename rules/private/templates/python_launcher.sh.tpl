#!/bin/sh
''':'
for d in "$0.runfiles" "${0%%.runfiles/*}.runfiles" "${RUNFILES_DIR:-.}"; do
  if [ -x "$d/{repo}/bin/python3" ]; then
    case "$d" in /*) ;; *) d="$PWD/$d" ;; esac
    PYTHONHOME="$d/{repo}"
    LD_LIBRARY_PATH="$d/{repo}/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    PYTHONNOUSERSITE=1
    PYTHONSAFEPATH=1
    PYTHONPATH="$d/{repo}/bin${PYTHONPATH:+:$PYTHONPATH}"
    export PYTHONHOME LD_LIBRARY_PATH PYTHONNOUSERSITE PYTHONSAFEPATH PYTHONPATH
    exec "$d/{repo}/bin/python3" "$0" "$@"
  fi
done
echo "$0: no {repo}/bin/python3 in its runfiles" >&2
exit 1
'''