#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Checks the documentation (the docs.check test):
#   1. every long flag that `ditask --help` lists appears literally in docs/cli.md;
#   2. every link [text](target) of README.md and docs/*.md points at an existing file and, with
#      an #anchor, at a heading of that file (GitHub anchors);
#   3. README.md has at most 160 lines.
# Usage: check_docs.sh <repository root> <path of the ditask binary>
# Only bash, grep, sed and awk: a fresh Debian 12 may have no python3.
set -euo pipefail
export LC_ALL=C

if [[ $# -ne 2 ]]; then
  echo "usage: $0 <repository root> <path of the ditask binary>" >&2
  exit 2
fi
root=${1%/}
ditask=$2
max_readme_lines=160
failed=0

problem() {
  echo "$*"
  failed=1
}

# --- 1. every flag of --help is in docs/cli.md ------------------------------------------------
cli="$root/docs/cli.md"
if [[ ! -f $cli ]]; then
  problem "docs/cli.md: missing"
elif ! help_text=$("$ditask" --help 2>&1); then
  problem "$ditask --help failed:"
  echo "$help_text"
else
  # A flag starts a line or follows a space, a comma or '(' ("-p,--package", "--a,--no-a{false}");
  # a lone "--" (module arguments) has no letter after it and is not matched.
  flags=$(grep -oE -- '(^|[ ,(])--[A-Za-z][A-Za-z0-9_-]*' <<<"$help_text" | sed -E 's/^[ ,(]//' | sort -u)
  if [[ -z $flags ]]; then
    problem "$ditask --help lists no --flag"
  fi
  for flag in $flags; do
    if ! grep -qE -- "(^|[^A-Za-z0-9_-])${flag}([^A-Za-z0-9_-]|\$)" "$cli"; then
      problem "docs/cli.md: missing flag $flag (listed by ditask --help)"
    fi
  done
fi

# --- 2. links ---------------------------------------------------------------------------------
# The GitHub anchors of a markdown file's headings, one a line: lowercase; characters other than
# letters, digits, spaces, '-' and '_' removed; spaces to '-'; a repeated heading gets -1, -2, ...
# Headings inside ``` or ~~~ fenced blocks do not count.
anchors_of() {
  awk '
    /^ *(```|~~~)/ { fence = !fence; next }
    fence { next }
    /^#+[ \t]/ {
      h = $0
      sub(/^#+[ \t]+/, "", h)
      sub(/[ \t]+#+[ \t]*$/, "", h)
      sub(/[ \t]+$/, "", h)
      h = tolower(h)
      gsub(/[^a-z0-9 _-]/, "", h)
      gsub(/ /, "-", h)
      if (h in seen) { print h "-" seen[h]; seen[h]++ } else { print h; seen[h] = 1 }
    }
  ' "$1"
}

# The targets of the [text](target) links of a markdown file, one a line; code spans and fenced
# blocks are not markdown, so links inside them are not links.
links_of() {
  awk '
    /^ *(```|~~~)/ { fence = !fence; next }
    fence { next }
    {
      line = $0
      gsub(/`[^`]*`/, "", line)
      while (match(line, /\[[^]]*\]\([^)]*\)/)) {
        link = substr(line, RSTART, RLENGTH)
        line = substr(line, RSTART + RLENGTH)
        sub(/^\[[^]]*\]\(/, "", link)
        sub(/\)$/, "", link)
        sub(/^[ \t]+/, "", link)
        sub(/[ \t].*$/, "", link)  # an optional "title"
        print link
      }
    }
  ' "$1"
}

md_files=("$root/README.md")
if [[ -d $root/docs ]]; then
  for f in "$root"/docs/*.md; do
    [[ -e $f ]] && md_files+=("$f")
  done
fi

for md in "${md_files[@]}"; do
  if [[ ! -f $md ]]; then
    problem "${md#"$root"/}: missing"
    continue
  fi
  rel=${md#"$root"/}
  dir=$(dirname "$md")
  while IFS= read -r target; do
    [[ -z $target ]] && continue
    case $target in
      http://* | https://* | mailto:*) continue ;;
    esac
    path=${target%%#*}
    anchor=""
    if [[ $target == *"#"* ]]; then
      anchor=${target#*#}
    fi
    if [[ -z $path ]]; then
      file=$md
    else
      file="$dir/$path"
    fi
    if [[ ! -e $file ]]; then
      problem "$rel: broken link $target"
      continue
    fi
    if [[ -n $anchor ]]; then
      # Into a variable first: grep -q stopping early must not fail the pipeline (pipefail).
      anchors=""
      if [[ -f $file ]]; then
        anchors=$(anchors_of "$file")
      fi
      if ! grep -qxF -- "$anchor" <<<"$anchors"; then
        problem "$rel: broken link $target"
      fi
    fi
  done < <(links_of "$md")
done

# --- 3. README.md fits on a screen or two -------------------------------------------------------
if [[ -f $root/README.md ]]; then
  lines=$(wc -l <"$root/README.md")
  if ((lines > max_readme_lines)); then
    problem "README.md: $lines lines, at most $max_readme_lines (move the details into docs/)"
  fi
fi

if ((failed)); then
  echo "docs check failed"
  exit 1
fi
echo "docs check passed"
