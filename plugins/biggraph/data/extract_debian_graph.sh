#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Extracts the dependency graph of Debian packages from a Packages index into the edge list the
# biggraph job trains on: one line per edge, "<relation>\t<package>\t<depends-on package>", with
# relation D (Depends, Pre-Depends), R (Recommends) or S (Suggests); for a choice "a | b" the
# first alternative; version constraints and architecture qualifiers dropped; only edges between
# packages of the index (virtual packages left out); sorted, unique, gzip -9.
#
#   plugins/biggraph/data/extract_debian_graph.sh [Packages index] > debian12_deps.tsv.gz
#
# The index may be plain, .gz, .xz or .lz4 (apt's lists; lz4 needs the lz4 package). Default: the
# amd64 main index of Debian 12 (bookworm) in /var/lib/apt/lists (after `apt-get update`).
set -euo pipefail
index="${1:-$(ls /var/lib/apt/lists/*_debian_dists_bookworm_main_binary-amd64_Packages* 2>/dev/null | head -n 1)}"
[[ -n "$index" && -r "$index" ]] || { echo "error: no Packages index (run apt-get update, or name one)" >&2; exit 2; }
case "$index" in
  *.lz4) reader=(lz4cat) ;;
  *.gz) reader=(gzip -dc) ;;
  *.xz) reader=(xz -dc) ;;
  *) reader=(cat) ;;
esac
"${reader[@]}" "$index" | awk '
  function flush(   rel, n, i, deps, d, alt) {
    if (pkg == "") return
    known[pkg] = 1
    for (rel in field) {
      n = split(field[rel], deps, ",")
      for (i = 1; i <= n; i++) {
        d = deps[i]
        split(d, alt, "|"); d = alt[1]
        sub(/\(.*$/, "", d); sub(/\[.*$/, "", d); sub(/<.*$/, "", d)
        gsub(/[ \t]/, "", d); sub(/:.*$/, "", d)
        if (d != "" && d != pkg) edges[++m] = rel "\t" pkg "\t" d
      }
    }
    pkg = ""; delete field
  }
  /^Package: / { flush(); pkg = $2; next }
  /^(Depends|Pre-Depends): / { sub(/^[^:]*: /, ""); field["D"] = (field["D"] == "" ? $0 : field["D"] "," $0); next }
  /^Recommends: / { sub(/^[^:]*: /, ""); field["R"] = $0; next }
  /^Suggests: / { sub(/^[^:]*: /, ""); field["S"] = $0; next }
  /^$/ { flush() }
  END {
    flush()
    for (i = 1; i <= m; i++) { split(edges[i], e, "\t"); if (e[3] in known) print edges[i] }
  }' | LC_ALL=C sort -u | gzip -9n
