#!/usr/bin/env bash
# Install libbroadcast into a temporary prefix and use it the way a program outside the repository
# would, then uninstall it:
#   - the files are there, the shared library's SONAME is libbroadcast.so.MAJOR and it carries no
#     debug info (its size is printed);
#   - tests/install/consumer.c, copied out of the repository, is built four ways: with nothing but
#     `pkg-config --cflags --libs broadcast` (shared), with `pkg-config --static` (static), and by
#     a CMake project using find_package(broadcast CONFIG) (broadcast::shared, broadcast::static);
#     each runs, with no LD_LIBRARY_PATH (the shared builds find the library by an rpath to the
#     prefix's lib), prints tests/install/expected.txt, and links the library it should; the C++
#     quick start (examples/quickstart.cpp, the installed broadcast.hpp) is built with CMake too;
#   - the CMake package still works after the whole prefix is moved elsewhere, and its version
#     file accepts and refuses the right requests;
#   - the README's quick-start lines (C, C++, Go) run as written against the checkout and the
#     prefix (scripts/quickstart_check.py);
#   - `make uninstall` removes every file `make install` put there, also with DESTDIR.
# Needs cc, c++, go, python3, pkg-config, cmake, objdump/readelf (binutils). Linux; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
MAJOR=${VERSION%%.*}
CC=${CC:-cc}
unset LD_LIBRARY_PATH

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
step() { echo; echo "=== install check: $1"; }
die() { echo "install check FAILED: $1" >&2; exit 1; }

step "make install PREFIX=$prefix"
make --no-print-directory install PREFIX="$prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; die "make install"; }
(cd "$prefix" && find . -mindepth 1 \( -type f -o -type l \) | sort) | tee "$work/installed.txt"
for f in "lib/libbroadcast.so.$VERSION" "lib/libbroadcast.so.$MAJOR" lib/libbroadcast.so lib/libbroadcast.a \
    include/broadcast.h include/broadcast.hpp lib/pkgconfig/broadcast.pc lib/cmake/broadcast/broadcastConfig.cmake \
    lib/cmake/broadcast/broadcastConfigVersion.cmake; do
    [ -e "$prefix/$f" ] || die "$f is not installed"
done
so=$prefix/lib/libbroadcast.so.$VERSION
soname=$(objdump -p "$so" | awk '$1 == "SONAME" { print $2 }')
echo "SONAME $soname"
[ "$soname" = "libbroadcast.so.$MAJOR" ] || die "SONAME is '$soname', not libbroadcast.so.$MAJOR"
if readelf -S "$so" | grep -q '\.debug_'; then die "the installed shared library has debug sections"; fi
echo "installed shared library: $(stat -c %s "$so") bytes, no debug sections;" \
    "static library: $(stat -c %s "$prefix/lib/libbroadcast.a") bytes"

# The consumer is built from a copy outside the repository, and its output compared with the
# expected text (the documented results, written by hand).
mkdir "$work/consumer"
cp tests/install/consumer.c tests/install/CMakeLists.txt examples/quickstart.cpp "$work/consumer/"
sed "s/@VERSION@/$VERSION/g" tests/install/expected.txt >"$work/expected.txt"
cp tests/install/expected_cpp.txt "$work/expected_cpp.txt"
cd "$work/consumer"

# needs <exe> yes|no: whether the program asks for libbroadcast.so.MAJOR at run time.
needs() {
    local got=no
    if readelf -d "$1" | grep -q "NEEDED.*\[libbroadcast\.so\.$MAJOR\]"; then got=yes; fi
    [ "$got" = "$2" ] || die "$1: links libbroadcast dynamically: $got, expected $2"
}
# run <exe> [expected file]
run() {
    local exe=$1 expected=${2:-$work/expected.txt}
    "$exe" >"$exe.out" 2>&1 || { cat "$exe.out"; die "$exe exited with $?"; }
    diff -u "$expected" "$exe.out" || die "$exe printed something else"
    echo "$exe: as expected"
}

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
step "pkg-config, shared: $(pkg-config --cflags --libs broadcast)"
libdir=$(pkg-config --variable=libdir broadcast)
# shellcheck disable=SC2046 # word splitting of pkg-config's flags is intended
$CC -std=c11 -Wall -Wextra -Werror consumer.c $(pkg-config --cflags --libs broadcast) \
    -Wl,-rpath,"$libdir" -o pc_shared
needs ./pc_shared yes
run ./pc_shared

step "pkg-config, static: -Wl,-Bstatic $(pkg-config --static --libs broadcast)"
# -Wl,-Bstatic makes the linker take libbroadcast.a over the .so beside it; the .pc's private
# libraries switch back to shared linking for the system libraries.
# shellcheck disable=SC2046
$CC -std=c11 -Wall -Wextra -Werror consumer.c $(pkg-config --cflags broadcast) \
    -Wl,-Bstatic $(pkg-config --static --libs broadcast) -o pc_static
needs ./pc_static no
run ./pc_static

step "CMake: find_package(broadcast CONFIG), shared and static, and C++"
cmake -S . -B build -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >cmake.log 2>&1 ||
    { cat cmake.log; die "cmake configure"; }
grep "broadcast $VERSION from" cmake.log
cmake --build build >>cmake.log 2>&1 || { cat cmake.log; die "cmake build"; }
needs build/consumer_shared yes
run build/consumer_shared
needs build/consumer_static no
run build/consumer_static
needs build/quickstart_cpp yes
run build/quickstart_cpp "$work/expected_cpp.txt"

step "the CMake package after moving the prefix"
mv "$prefix" "$work/moved"
rm -rf build
cmake -S . -B build -DCMAKE_PREFIX_PATH="$work/moved" >cmake.log 2>&1 || { cat cmake.log; die "cmake configure (moved)"; }
cmake --build build >>cmake.log 2>&1 || { cat cmake.log; die "cmake build (moved)"; }
run build/consumer_shared
run build/consumer_static
mv "$work/moved" "$prefix"

step "the CMake version file"
cat >version.cmake <<'CMAKE'
include("${DIR}/broadcastConfigVersion.cmake")
if(PACKAGE_VERSION_COMPATIBLE)
  message("compatible")
else()
  message("incompatible")
endif()
CMAKE
minor=$(echo "$VERSION" | cut -d. -f2)
for case in "$MAJOR.0 compatible" "$VERSION compatible" "$MAJOR.$((minor + 1)) incompatible" \
    "$((MAJOR + 1)).0 incompatible"; do
    want=${case#* } request=${case% *}
    got=$(cmake -DDIR="$prefix/lib/cmake/broadcast" -DPACKAGE_FIND_VERSION="$request" \
        -DPACKAGE_FIND_VERSION_MAJOR="${request%%.*}" -P version.cmake 2>&1)
    echo "request $request: $got"
    [ "$got" = "$want" ] || die "a request for $request should be $want"
done

cd "$ROOT"
step "the README's quick starts, as written, against the checkout and the prefix"
python3 scripts/quickstart_check.py "$prefix" || die "a quick start does not run as the README writes it"

step "make uninstall"
make --no-print-directory uninstall PREFIX="$prefix" >/dev/null
left=$(find "$prefix" \( -type f -o -type l \) | sort)
[ -z "$left" ] || die "left after uninstall: $left"
echo "nothing left"

step "make install / uninstall with DESTDIR"
make --no-print-directory install DESTDIR="$work/stage" PREFIX=/opt/libbroadcast >/dev/null 2>&1 ||
    die "make install DESTDIR"
(cd "$work/stage/opt/libbroadcast" && find . -mindepth 1 \( -type f -o -type l \) | sort) >"$work/staged.txt"
diff -u "$work/installed.txt" "$work/staged.txt" || die "DESTDIR installs other files"
grep -qx 'prefix=/opt/libbroadcast' "$work/stage/opt/libbroadcast/lib/pkgconfig/broadcast.pc" ||
    die "broadcast.pc does not name the final prefix"
make --no-print-directory uninstall DESTDIR="$work/stage" PREFIX=/opt/libbroadcast >/dev/null
left=$(find "$work/stage" \( -type f -o -type l \) | sort)
[ -z "$left" ] || die "left after uninstall with DESTDIR: $left"
echo "nothing left"

echo
echo "install check: passed"
