# Sourced by go_test.sh and go_bench.sh: writes target/pkgconfig/broadcast-uninstalled.pc for the
# library of this checkout (pkg-config prefers it to an installed broadcast.pc) and puts it on
# PKG_CONFIG_PATH. Sets root, lib and go.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
go="${GO:-go}"
lib="$root/target/release"
pc="$root/target/pkgconfig"
mkdir -p "$pc"
cat >"$pc/broadcast-uninstalled.pc" <<PC
libdir=$lib
includedir=$root/include

Name: broadcast
Description: libbroadcast, uninstalled (the build in $root)
Version: $(sed -n 's/^#define BC_VERSION_STRING "\(.*\)"/\1/p' "$root/include/broadcast.h")
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lbroadcast
PC
export PKG_CONFIG_PATH="$pc${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
