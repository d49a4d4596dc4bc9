#!/bin/sh
# Draft release notes from a changes file (see ../template.md): usage draft.sh CHANGES VERSION
set -eu
changes=$1
version=$2
printf '# Release %s\n' "$version"
section() {
    heading=$1
    prefix=$2
    lines=$(sed -n "s/^$prefix: /- /p" "$changes")
    if [ -n "$lines" ]; then
        printf '\n## %s\n%s\n' "$heading" "$lines"
    fi
}
section 'Breaking changes' breaking
section 'Features' feat
section 'Fixes' fix
