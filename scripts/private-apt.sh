# Sourced by the provision scripts, not run: apt that reads a private source
# list and keeps its indexes in a temporary folder, so the machine's apt
# sources, lists and installed packages stay as they were.
#
#     private_apt TYPE SUITE   # TYPE deb or deb-src, from the machine's own Debian mirror
#
# sets `work` (the temporary folder, removed at exit; `$work/download` is where
# apt may write) and `private` (the options every apt-get call then takes), and
# updates the private indexes. Returns 1 when no Debian mirror is configured.

private_apt() {
    local type=$1 suite=$2 mirror
    # Reuse the mirror of the machine's own Debian sources; never name a host here.
    mirror=$(grep -hoE '^(URIs:|deb) *[^ ]+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
        | grep -v -- '-security' | grep -oE '(https?|file)://[^ ]+/debian/?$' | head -n1 || true)
    if [[ -z "$mirror" ]] || ! command -v apt-get >/dev/null; then
        echo "private_apt: no Debian mirror found in /etc/apt/sources.list*" >&2
        return 1
    fi
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    chmod 755 "$work"  # lets apt's sandbox user read there
    mkdir -p "$work/lists/partial" "$work/archives/partial" "$work/download"
    chmod 777 "$work/download"  # and write the download there
    cat > "$work/private.sources" <<SRC
Types: $type
URIs: $mirror
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
    private=(-o Dir::Etc::sourcelist="$work/private.sources" -o Dir::Etc::sourceparts=-
             -o Dir::State::Lists="$work/lists" -o Dir::Cache::archives="$work/archives"
             -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
    apt-get update -qq "${private[@]}" >&2
}
