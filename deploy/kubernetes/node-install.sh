#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# The DaemonSet's init container (execguard.yaml): puts what the node
# itself needs under ROOT (the node's / mounted there): the hook with the
# libraries it links and its own loader in /opt/execguard (it runs in the
# node's namespaces, with the node's libraries absent or different), its
# hooks.d file for CRI-O and podman, the D-Bus policy that lets execguardd
# own its name on the node's system bus (dbus-daemon reloads it by
# itself). containerd's NRI hook-injector plugin reads the same hooks.d
# file (docs/containers.md).
set -eu
root=${1:?usage: node-install.sh ROOT}
hook=/usr/libexec/execguard/execguard-oci-hook
dest=$root/opt/execguard
mkdir -p "$dest/lib"
for lib in $(ldd "$hook" | awk '/=> \// { print $3 } /^\t\// { print $1 }'); do
	cp -L "$lib" "$dest/lib/"
done
cp "$hook" "$dest/execguard-oci-hook.bin"
loader=$(basename "$(ldd "$hook" | awk '/^\t\// { print $1 }')")
cat > "$dest/execguard-oci-hook.new" <<WRAP
#!/bin/sh
exec /opt/execguard/lib/$loader --library-path /opt/execguard/lib /opt/execguard/execguard-oci-hook.bin "\$@"
WRAP
chmod 755 "$dest/execguard-oci-hook.new"
mv "$dest/execguard-oci-hook.new" "$dest/execguard-oci-hook"
sed 's|"path": *"[^"]*"|"path": "/opt/execguard/execguard-oci-hook"|' \
	/usr/share/containers/oci/hooks.d/execguard.json > "$root/etc/containers/oci/hooks.d/execguard.json"
cp /usr/share/dbus-1/system.d/org.execguard.Manager1.conf "$root/etc/dbus-1/system.d/"
echo "execguard: hook in /opt/execguard, its hooks.d file and the D-Bus policy installed"
