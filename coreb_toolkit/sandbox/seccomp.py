"""A tiny seccomp filter for sandboxed runs, assembled as classic BPF (no libseccomp needed).

What it refuses, and why:

* ``socket()`` for every address family but ``AF_UNIX``: the run has no network anyway (its own
  network namespace), but the kernel memory behind TCP, UDP and netlink socket queues is not
  charged to the run's memory cgroup, so a program could pin many times its memory cap in
  socket buffers (found by the adversarial suite). Unix-socket memory is charged; it stays.
  Refused with ``EAFNOSUPPORT``, as on a kernel without that family.
* system calls of any other ABI (i386, x32): the filter only understands x86-64 calls, so a
  32-bit ``socketcall`` could otherwise slip past it. Refused with ``ENOSYS``.

Everything else is allowed. The program is handed to bubblewrap's ``--seccomp FD``.
"""

from __future__ import annotations

import errno
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
NR_SOCKET = 41  # x86-64
AF_UNIX = 1

# Classic BPF opcodes.
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K

SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000

# Offsets in struct seccomp_data: nr (int), arch (u32), instruction_pointer (u64), args[6].
_NR, _ARCH, _ARG0_LOW = 0, 4, 16


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def supported() -> bool:
    """The filter is written for x86-64 hosts."""
    return platform.machine() in ("x86_64", "AMD64")


def filter_program() -> bytes:
    """The BPF program (an array of ``struct sock_filter``)."""
    deny_socket = SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT
    deny_abi = SECCOMP_RET_ERRNO | errno.ENOSYS
    program = [
        _insn(_LD_W_ABS, 0, 0, _ARCH),
        _insn(_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),  # x86-64: skip to the next check
        _insn(_RET_K, 0, 0, deny_abi),
        _insn(_LD_W_ABS, 0, 0, _NR),
        _insn(_JGE_K, 0, 1, X32_SYSCALL_BIT),  # x32 ABI call numbers
        _insn(_RET_K, 0, 0, deny_abi),
        _insn(_JEQ_K, 0, 3, NR_SOCKET),  # not socket(): allow
        _insn(_LD_W_ABS, 0, 0, _ARG0_LOW),  # socket's domain
        _insn(_JEQ_K, 1, 0, AF_UNIX),
        _insn(_RET_K, 0, 0, deny_socket),
        _insn(_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
    return b"".join(program)
