#!/bin/sh
# Runs as root inside a minimal Debian 12 root (scripts/test_packages.sh
# makes it with mmdebstrap) holding the packages in /tmp/debs: installs them
# as a user would, then checks what each package promises. One line per
# failure; exit 1 at the first.
#   sh /tmp/in_root.sh VERSION
set -eu
version=$1
fail() { echo "package test: $*" >&2; exit 1; }
step() { echo "package test: $*"; }
mode() { stat -c '%a %U %G' "$1"; }

step "apt install ./*.deb (dependencies from the archive)"
cd /tmp/debs
apt-get install -y -q --no-install-recommends ./canhazgpu_*.deb ./k8shazgpu_*.deb \
  ./k8shazgpu-node_*.deb >/tmp/install.log 2>&1 || { cat /tmp/install.log; fail "apt install failed"; }
cd /

step "the state directory: root-owned and sticky, no state file yet"
[ "$(mode /var/lib/canhazgpu)" = "1777 root root" ] ||
  fail "/var/lib/canhazgpu is $(mode /var/lib/canhazgpu), want 1777 root root"
[ ! -e /var/lib/canhazgpu/state.db ] || fail "the package made a state file"
chmod 0777 /var/lib/canhazgpu
systemd-tmpfiles --create canhazgpu.conf
[ "$(mode /var/lib/canhazgpu)" = "1777 root root" ] || fail "tmpfiles.d did not restore 1777"

step "canhazgpu on a simulated host"
canhazgpu admin --provider fake --gpus 2
[ "$(mode /var/lib/canhazgpu/state.db)" = "666 root root" ] ||
  fail "state.db is $(mode /var/lib/canhazgpu/state.db), want 666 root root"
canhazgpu run --gpus 1 -- true
canhazgpu status --json >/tmp/status.json
[ "$(grep -c '"gpu_id"' /tmp/status.json)" = 2 ] || fail "status --json does not list 2 GPUs"
# Any local user reserves (the directory and file modes are for this).
setpriv --reuid=4242 --regid=4242 --clear-groups canhazgpu reserve --gpus 1 -d 5m
chg status | grep -q 'IN_USE' || fail "chg status does not show the reservation"
canhazgpu --version | grep -q "^canhazgpu $version " || fail "canhazgpu --version is not $version"

step "k8shazgpu and k8shazgpu-node"
k8shazgpu --version | grep -q "^k8shazgpu $version " || fail "k8shazgpu --version is not $version"
k8shazgpu-node --help >/tmp/node-help.txt || fail "k8shazgpu-node --help failed"
grep -q 'k8shazgpu-node' /tmp/node-help.txt || fail "k8shazgpu-node --help says nothing"

step "man pages, completions, the dashboard's unit"
for f in /usr/share/man/man1/canhazgpu.1.gz /usr/share/man/man1/chg.1.gz \
  /usr/share/man/man1/k8shazgpu.1.gz /usr/share/zsh/vendor-completions/_canhazgpu \
  /usr/share/zsh/vendor-completions/_k8shazgpu /lib/systemd/system/canhazgpu-web.service; do
  [ -e "$f" ] || fail "$f is missing"
done
zcat /usr/share/man/man1/canhazgpu.1.gz | grep -q '^\.TH CANHAZGPU' || fail "canhazgpu.1 is not a man page"
bash -c '. /usr/share/bash-completion/completions/chg && complete -p chg' | grep -q _canhazgpu ||
  fail "bash completion for chg"
grep -q '^ExecStart=/usr/bin/canhazgpu web --host 127.0.0.1 ' /lib/systemd/system/canhazgpu-web.service ||
  fail "the dashboard's unit does not bind to localhost"

step "remove keeps the state file; purge removes it and says so"
apt-get remove -y -q canhazgpu >/dev/null 2>&1 || fail "apt remove failed"
[ -f /var/lib/canhazgpu/state.db ] || fail "remove deleted the state file"
dpkg --purge canhazgpu >/tmp/purge.log 2>&1 || { cat /tmp/purge.log; fail "purge failed"; }
grep -q '^canhazgpu: purge removes /var/lib/canhazgpu/state.db$' /tmp/purge.log ||
  { cat /tmp/purge.log; fail "purge did not say it removes the state file"; }
[ ! -e /var/lib/canhazgpu ] || fail "purge left /var/lib/canhazgpu"

step "without systemd-tmpfiles (a container) the directory is made all the same"
apt-get remove -y -q systemd-standalone-tmpfiles >/dev/null 2>&1
dpkg -i /tmp/debs/canhazgpu_*.deb >/dev/null
[ "$(mode /var/lib/canhazgpu)" = "1777 root root" ] ||
  fail "without tmpfiles /var/lib/canhazgpu is $(mode /var/lib/canhazgpu)"
step "all passed"
