#!/usr/bin/env bash
# Runs one command as root in a small QEMU virtual machine booted from Debian's own kernel, so tests
# can meet real kernel drivers (vivid, snd-aloop, uvcvideo) that this machine does not load:
#
#   Scripts/kernel-vm.sh run [--module "vivid n_devs=2"]... [--modules "vivid n_devs=2;snd-aloop"]
#                            [--timeout SECONDS] [--memory MIB] [--cpus N] [--env NAME=VALUE]...
#                            [--out DIR | --keep] -- COMMAND [ARGUMENT...]
#   Scripts/kernel-vm.sh check      boots the VM and runs `true` (says whether the VM can boot)
#
# The guest sees the host's root file system read-only (virtio-9p), with tmpfs on /tmp, /run (so
# /var/run) and /root, its own /dev (devtmpfs), /proc and /sys. The drivers asked for are loaded
# with modprobe before the command runs, in the host's current directory, as root, with
# VIEWFINDER_KERNEL_VM=1, HOME=/root and TMPDIR=/tmp. Anything the command writes to
# $VIEWFINDER_KERNEL_VM_OUT (a writable share) is left on the host in DIR (--out), or in a
# temporary directory that is removed afterwards (kept and named with --keep).
#
# The command's output (stdout and stderr) streams to this script's stdout; its exit status is
# this script's. The kernel's console goes to a log that is printed when the VM cannot boot, the
# drivers cannot load or the timeout (default 600 s) passes: then the status is 125 (could not
# run), 124 (timed out); VIEWFINDER_KERNEL_VM_VERBOSE=1 keeps every kernel message. Uses TCG,
# never KVM (a KVM guest hung at boot on the machine this was written on); no network device,
# loopback only. Installs what it needs through Scripts/install-dependencies.sh kernel-vm
# (Debian's linux-image-amd64, qemu-system-x86, busybox-static).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
usage() {
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

[ $# -ge 1 ] || usage
action="$1"
shift
modules=()
extra_env=()
timeout_seconds="${VIEWFINDER_KERNEL_VM_TIMEOUT:-600}"
memory=2048
cpus=2
keep=0
out_dir=""
case "$action" in
    run)
        while [ $# -gt 0 ]; do
            case "$1" in
                --module) modules+=("$2"); shift 2 ;;
                --modules)
                    IFS=';' read -r -a more <<<"$2"
                    for m in "${more[@]}"; do [ -n "${m// /}" ] && modules+=("$m"); done
                    shift 2
                    ;;
                --timeout) timeout_seconds="$2"; shift 2 ;;
                --memory) memory="$2"; shift 2 ;;
                --cpus) cpus="$2"; shift 2 ;;
                --env) extra_env+=("$2"); shift 2 ;;
                --keep) keep=1; shift ;;
                --out) out_dir="$2"; shift 2 ;;
                --) shift; break ;;
                *) echo "kernel-vm: unknown option '$1'" >&2; usage ;;
            esac
        done
        [ $# -ge 1 ] || { echo "kernel-vm: no command after --" >&2; usage; }
        ;;
    check) set -- true ;;
    *) usage ;;
esac

fail() {
    echo "kernel-vm: $*" >&2
    exit 125
}

"$root/Scripts/install-dependencies.sh" kernel-vm >&2 || fail "could not install the VM's packages (Scripts/install-dependencies.sh kernel-vm)"

# The newest installed Debian kernel that has its modules.
kernel=""
for image in $(ls -1 /boot/vmlinuz-* 2>/dev/null | sort -V -r); do
    version="${image#/boot/vmlinuz-}"
    if [ -f "/lib/modules/$version/modules.dep" ] && [ -f "/lib/modules/$version/kernel/fs/9p/9p.ko" ]; then
        kernel="$version"
        break
    fi
done
[ -n "$kernel" ] || fail "no kernel in /boot with its modules (and 9p) in /lib/modules: install linux-image-amd64"
[ -r "/boot/vmlinuz-$kernel" ] || fail "/boot/vmlinuz-$kernel is not readable by $(id -un)"
busybox=/bin/busybox
[ -x "$busybox" ] && file -L "$busybox" 2>/dev/null | grep -q 'statically linked' || busybox=/usr/bin/busybox
command -v qemu-system-x86_64 >/dev/null || fail "qemu-system-x86_64 is missing: install qemu-system-x86"

# The initramfs: busybox, the virtio and 9p modules (with what they depend on, in load order), and
# an init that mounts the host's root and runs the command. Cached by kernel and this script.
cache="${XDG_CACHE_HOME:-$HOME/.cache}/viewfinder-kernel-vm"
mkdir -p "$cache"
key="$(printf '%s\n' "$kernel" "$(sha256sum "$0" | cut -c1-16)" "$(stat -c %Y "$busybox")" | sha256sum | cut -c1-16)"
initramfs="$cache/initramfs-$kernel-$key.cpio.gz"
if [ ! -s "$initramfs" ]; then
    staging="$(mktemp -d)"
    trap 'rm -rf "$staging"' EXIT
    mkdir -p "$staging"/{bin,dev,proc,sys,newroot,modules,out}
    cp "$busybox" "$staging/bin/busybox"
    for applet in sh mount umount mkdir insmod chroot cat echo poweroff reboot sleep ls dmesg sync ip; do
        ln -s busybox "$staging/bin/$applet"
    done
    # Dependencies first: modules.dep lists a module's dependencies, deepest last.
    order=()
    add_module() {
        local path="$1" line dep
        for known in "${order[@]}"; do [ "$known" = "$path" ] && return 0; done
        line="$(grep "^$path:" "/lib/modules/$kernel/modules.dep")" || return 0
        local deps=(${line#*:})
        local i
        for ((i = ${#deps[@]} - 1; i >= 0; i--)); do add_module "${deps[$i]}"; done
        order+=("$path")
    }
    for name in virtio_pci 9pnet_virtio 9p; do
        path="$(grep -o "^[^:]*/$name\.ko[^:]*:" "/lib/modules/$kernel/modules.dep" | head -1 | tr -d :)"
        [ -n "$path" ] && add_module "$path"
    done
    : >"$staging/modules/order"
    for path in "${order[@]}"; do
        base="$(basename "$path")"
        cp "/lib/modules/$kernel/$path" "$staging/modules/$base"
        echo "$base" >>"$staging/modules/order"
    done
    cat >"$staging/init" <<'INIT'
#!/bin/sh
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# Loopback only (no network device): servers on 127.0.0.1, Foundation's wakeup sockets.
ip link set lo up
for m in $(cat /modules/order); do insmod /modules/$m 2>/dev/null; done
say() { echo "kernel-vm: $*" >/dev/ttyS1; echo "kernel-vm: $*" >/dev/console; }
halt() { sync; echo o >/proc/sysrq-trigger; sleep 5; poweroff -f; }
if ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro hostroot /newroot; then
    say "could not mount the host's root over virtio-9p"; halt
fi
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp
mkdir -p /newroot/tmp/.kernel-vm-out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 vmout /newroot/tmp/.kernel-vm-out || { say "could not mount the output share"; halt; }
mount -t tmpfs tmpfs /newroot/run
mount -t tmpfs -o mode=0700 tmpfs /newroot/root
mount -t proc proc /newroot/proc
mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs -o mode=1777 tmpfs /newroot/dev/shm
mount -t configfs configfs /newroot/sys/kernel/config 2>/dev/null
ln -s /proc/self/fd /newroot/dev/fd 2>/dev/null
chroot /newroot /bin/sh /tmp/.kernel-vm-out/guest.sh >/dev/ttyS1 2>&1 </dev/null
echo "$?" >/newroot/tmp/.kernel-vm-out/status
sync
halt
INIT
    chmod +x "$staging/init"
    (cd "$staging" && find . | cpio -o -H newc --quiet | gzip -1) >"$initramfs.tmp"
    mv "$initramfs.tmp" "$initramfs"
    rm -rf "$staging"
    trap - EXIT
fi

if [ -n "$out_dir" ]; then
    mkdir -p "$out_dir"
    out="$(cd "$out_dir" && pwd)"
    keep=2
else
    out="$(mktemp -d "${TMPDIR:-/tmp}/kernel-vm.XXXXXX")"
fi
chmod 755 "$out"
cleanup() {
    if [ -n "${tail_pid:-}" ]; then kill "$tail_pid" 2>/dev/null || true; fi
    case "$keep" in
        0) rm -rf "$out" ;;
        1) echo "kernel-vm: kept $out" >&2 ;;
    esac
}
trap cleanup EXIT

# The guest's script: environment, drivers, the command.
{
    echo '#!/bin/sh'
    echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    echo 'export HOME=/root TMPDIR=/tmp VIEWFINDER_KERNEL_VM=1 VIEWFINDER_KERNEL_VM_OUT=/tmp/.kernel-vm-out'
    [ -n "${CI:-}" ] && printf 'export CI=%q\n' "$CI"
    for assignment in "${extra_env[@]}"; do printf 'export %q\n' "$assignment"; done
    printf 'cd %q || exit 125\n' "$PWD"
    for module in "${modules[@]}"; do
        printf 'modprobe %s || { echo "kernel-vm: modprobe %s failed"; dmesg | tail -20; exit 125; }\n' "$module" "$module"
    done
    [ ${#modules[@]} -gt 0 ] && echo 'command -v udevadm >/dev/null && udevadm settle 2>/dev/null; sleep 0.2'
    printf 'exec'
    printf ' %q' "$@"
    echo
} >"$out/guest.sh"
: >"$out/output"
: >"$out/console"

# The kernel's own messages: errors only, or all of them with VIEWFINDER_KERNEL_VM_VERBOSE=1.
kernel_log="quiet loglevel=4"
[ "${VIEWFINDER_KERNEL_VM_VERBOSE:-}" = 1 ] && kernel_log="loglevel=7"
started=$(date +%s)
tail -n +1 -f "$out/output" &
tail_pid=$!
set +e
timeout --kill-after=10 "$timeout_seconds" qemu-system-x86_64 \
    -accel tcg -cpu max -smp "$cpus" -m "$memory" \
    -kernel "/boot/vmlinuz-$kernel" -initrd "$initramfs" \
    -append "console=ttyS0 panic=-1 $kernel_log rdinit=/init" \
    -nographic -monitor none -no-reboot -nic none \
    -serial "file:$out/console" -serial "file:$out/output" \
    -fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
    -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
    -fsdev "local,id=vmout,path=$out,security_model=none,multidevs=remap" \
    -device virtio-9p-pci,fsdev=vmout,mount_tag=vmout \
    </dev/null >"$out/qemu.log" 2>&1
qemu_status=$?
set -e
sleep 0.3
kill "$tail_pid" 2>/dev/null || true
wait "$tail_pid" 2>/dev/null || true
tail_pid=""
elapsed=$(($(date +%s) - started))

show_console() {
    echo "kernel-vm: --- QEMU ---" >&2
    tail -20 "$out/qemu.log" >&2
    echo "kernel-vm: --- kernel console (last 40 lines) ---" >&2
    tail -40 "$out/console" >&2
    [ "${VIEWFINDER_KERNEL_VM_VERBOSE:-}" = 1 ] || echo "kernel-vm: VIEWFINDER_KERNEL_VM_VERBOSE=1 shows every boot message" >&2
}
if [ "$qemu_status" = 124 ] || [ "$qemu_status" = 137 ]; then
    echo "kernel-vm: the VM did not finish within ${timeout_seconds} s (kernel $kernel, TCG)" >&2
    show_console
    exit 124
fi
if [ ! -s "$out/status" ]; then
    echo "kernel-vm: the VM stopped (QEMU status $qemu_status, after ${elapsed} s) without running the command: it could not boot or mount the host's root" >&2
    show_console
    exit 125
fi
status="$(cat "$out/status")"
[ "$status" = 125 ] && show_console
echo "kernel-vm: exit status $status after ${elapsed} s (kernel $kernel, TCG, boot included)" >&2
exit "$status"
