#!/usr/bin/env bash
# Checks that the repository's prose, code and docs speak of the project (what it does, how,
# measured how) and not of how the work on it was divided: no working-period names, no issue
# numbers or issue branches, and the PyTorch recipe called by that name, not "the seed recipe"
# (easily read as the random seed). The history belongs in CHANGELOG.md, which is not checked.
# Links to an upstream project's issues (github.com/OWNER/REPO/issues/N) are allowed.
#
# Usage: scripts/check-prose.sh   (from anywhere inside the repository)
# Prints each hit as FILE:LINE:TEXT. Exit status: 0 when there is none, 1 when there are hits.
set -euo pipefail

cd "$(git rev-parse --show-toplevel)"

# Case-insensitive extended regular expressions (GNU grep), joined into one.
patterns=(
    '\bsessions? #?[0-9]'
    '\(session'
    '\bissues? #?[0-9]'
    '\bissue-?[0-9]+'
    'seed recipe'
    "seed's (job|recipe)"
)
pattern=$(IFS='|'; printf '%s' "${patterns[*]}")
# Removed from a line before it is matched: links to an upstream project's issues.
allowed='https?://github\.com/[^[:space:])>]*/issues/[0-9]+'

# Tracked text files, except the history, lock files, data, fuzzing corpora, images, the patched
# upstream crate and this script (whose patterns would match themselves).
files=()
while IFS= read -r -d '' file; do
    case "$file" in
        CHANGELOG.md | Cargo.lock | */Cargo.lock | data/* | fuzz/corpus/* | docs/images/*) continue ;;
        scripts/check-prose.sh) continue ;;
        # A copy of an upstream crate, whose comments cite its own project's issues.
        patches/burn-flex/*) continue ;;
    esac
    [[ -f "$file" ]] || continue
    # -I: a file with a NUL byte is binary and never matches.
    grep -Iq '' "$file" 2>/dev/null || continue
    files+=("$file")
done < <(git ls-files -z)

hits=()
if ((${#files[@]} > 0)); then
    while IFS= read -r hit; do
        # FILE:LINE:TEXT; match the text again with the allowed links taken out.
        text=${hit#*:}
        text=${text#*:}
        if sed -E "s#${allowed}##g" <<<"$text" | grep -qiE -- "$pattern"; then
            hits+=("$hit")
        fi
    done < <(grep -HniE -- "$pattern" "${files[@]}" || true)
fi

if ((${#hits[@]} > 0)); then
    printf '%s\n' "${hits[@]}"
    echo "check-prose: ${#hits[@]} line(s) name a working period, an issue or 'the seed recipe';" \
        "describe the project instead (the history belongs in CHANGELOG.md)." >&2
    exit 1
fi
echo "check-prose: no working-period names, issue numbers or 'seed recipe' in the tracked files."
