"""Adversarial programs in the five languages: each must get the right verdict AND leave the host
untouched (no surviving process or cgroup, no file, no connection, no leaked secret).

The batch runs once (module fixture) in two ``execute()`` calls: Python, C++ and Ruby under small
limits, Java and Go with a bigger wall clock (JVM start-up, Go builds). Programs that probe the
sandbox print one line per attempt, ``<label> DENIED`` or ``<label> ALLOWED``, on stdout (judged)
and with the reason on stderr (shown in the failure message when the verdict is not ``pass``).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import shutil
import socket
import tempfile
import textwrap
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from coreb_toolkit.sandbox import ExecutionConfig, Limits, execute
from coreb_toolkit.sandbox import isolation as isolation_module
from coreb_toolkit.sandbox.isolation import CGROUP_ROOT, CONTROLLERS, owner_tag, temp_root

pytestmark = pytest.mark.needs_toolchain("bwrap", "g++", "javac", "go", "ruby")

TAG = "adv" + uuid.uuid4().hex[:10]  # 13 characters: fits a process name (comm, 15)
SECRET = "hf_" + uuid.uuid4().hex
SMALL = Limits(
    wall_time_s=3, cpu_time_s=2, memory_mb=256, max_processes=32, output_bytes=1_000_000,
    tmpfs_mb=16,
)  # fmt: skip
BIG = Limits(  # Java and Go
    wall_time_s=8, cpu_time_s=3, memory_mb=256, max_processes=64, output_bytes=1_000_000,
    tmpfs_mb=16,
)  # fmt: skip
HOST_REPO = Path(__file__).resolve().parents[2]  # this repository: never visible inside

# process_limit: the kernel refused a fork at pids.max and the program failed (spawn bombs)
LIMITED = frozenset(
    {"runtime_error", "time_limit", "memory_limit", "process_limit", "output_limit"}
)
PASS = frozenset({"pass"})

# Regression cases for two holes this suite found (both fixed in the sandbox): bubblewrap's own
# root and /dev tmpfs mounts were writable and uncapped (now remounted read-only), and socket
# buffers of TCP/UDP/netlink escaped the memory cgroup (now only Unix sockets may be created).
SOCKET_CAP_MB = 32


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


@dataclass(frozen=True)
class Case:
    id: str
    language: str
    code: str
    verdicts: frozenset[str]  # acceptable verdicts
    output: str = ""  # expected stdout
    denied: tuple[str, ...] = ()  # probe labels that must all print DENIED (then the output)
    input: str = ""
    exit_code: int | None = None
    host_paths: tuple[str, ...] = ()  # must not exist on the host afterwards
    slow_runtime: bool = False  # Java and Go: the bigger limits
    memory_mb: int | None = None  # a per-candidate memory limit

    def candidate(self, subs: dict[str, str]) -> dict:
        code = self.code
        for key, value in subs.items():
            code = code.replace(key, value)
        output = "".join(f"{label} DENIED\n" for label in self.denied) or self.output
        cand = {"id": self.id, "language": self.language, "code": code,
                "tests": [{"input": self.input, "output": output}]}  # fmt: skip
        if self.memory_mb is not None:
            cand["memory_mb"] = self.memory_mb
        return cand


PY_REPORT = src("""
    import ctypes, errno, os, signal, socket, subprocess, sys

    def report(label, attempt):
        try:
            detail = attempt()
        except Exception as err:
            line, note = f"{label} DENIED", f"{type(err).__name__}: {err}"
        else:
            line, note = f"{label} ALLOWED", repr(detail)[:300]
        print(line, flush=True)
        print(line, note, file=sys.stderr, flush=True)

    def found(what):  # looking for something that must not be there
        if what:
            return what
        raise LookupError("nothing found")

    def ok(rc):  # a command or libc call that must fail
        if rc != 0:
            raise OSError(ctypes.get_errno() or rc, f"failed ({rc})")
        return rc

    libc = ctypes.CDLL(None, use_errno=True)
""")

RB_REPORT = src("""
    require "socket"

    def report(label)
      begin
        detail = yield
        line, note = "#{label} ALLOWED", detail.inspect[0, 300]
      rescue StandardError, ScriptError => e
        line, note = "#{label} DENIED", "#{e.class}: #{e.message}"
      end
      puts line
      $stdout.flush
      $stderr.puts "#{line} #{note}"
    end
""")

CPP_REPORT = src(r"""
    #include <cerrno>
    #include <csignal>
    #include <cstdio>
    #include <cstring>
    #include <fcntl.h>
    #include <sys/stat.h>
    #include <unistd.h>

    static void report(const char* label, long rc) {
        int e = errno;
        const char* what = rc < 0 ? "DENIED" : "ALLOWED";
        printf("%s %s\n", label, what);
        fflush(stdout);
        fprintf(stderr, "%s %s (%s)\n", label, what, rc < 0 ? strerror(e) : "ok");
    }
""")

WRITE_DIRS = ("/usr", "/usr/local/bin", "/app", "/root", "/work/main")

CASES: list[Case] = [
    # --- correct programs: the sandbox must not break honest code ---------------------------
    Case("py-ok", "python", src("""
        a, b = map(int, input().split())
        print(a + b)
    """), PASS, output="3\n", input="1 2\n"),
    Case("cpp-ok", "cpp", src("""
        #include <iostream>
        int main() { long a, b; std::cin >> a >> b; std::cout << a + b << std::endl; }
    """), PASS, output="3\n", input="1 2\n"),
    Case("rb-ok", "ruby", src("""
        a, b = gets.split.map(&:to_i)
        puts a + b
    """), PASS, output="3\n", input="1 2\n"),
    Case("java-ok", "java", src("""
        import java.util.*;
        public class Main {
            public static void main(String[] x) {
                Scanner s = new Scanner(System.in);
                System.out.println(s.nextLong() + s.nextLong());
            }
        }
    """), PASS, output="3\n", input="1 2\n", slow_runtime=True),
    Case("go-ok", "go", src("""
        package main
        import "fmt"
        func main() { var a, b int; fmt.Scan(&a, &b); fmt.Println(a + b) }
    """), PASS, output="3\n", input="1 2\n", slow_runtime=True),
    # --- fork and spawn bombs: pids.max and the limits stop them, nothing survives ------------
    Case("py-forkbomb", "python", src("""
        import ctypes, os
        ctypes.CDLL(None).prctl(15, b"@TAG@", 0, 0, 0)  # PR_SET_NAME, inherited by forks
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """), LIMITED),
    Case("cpp-forkbomb", "cpp", src("""
        #include <sys/prctl.h>
        #include <unistd.h>
        int main() { prctl(PR_SET_NAME, "@TAG@"); for (;;) fork(); }
    """), LIMITED),
    Case("rb-forkbomb", "ruby", src("""
        $0 = "@TAG@"
        loop do
          begin
            fork
          rescue SystemCallError
          end
        end
    """), LIMITED),
    Case("sh-forkbomb", "python", src("""
        import subprocess
        bomb = "bomb() { bomb | bomb & }; bomb; sleep 30; : @TAG@"
        subprocess.run(["/bin/sh", "-c", bomb], stderr=subprocess.DEVNULL)
        print("bomb over")
    """), LIMITED | {"wrong_answer"}, output="never printed"),
    Case("java-spawnbomb", "java", src("""
        import java.util.*;
        public class Main {
            public static void main(String[] a) {
                List<Process> ps = new ArrayList<>();
                while (true) {
                    try {
                        ps.add(new ProcessBuilder("/bin/sh", "-c", "sleep 30; : @TAG@").start());
                    } catch (Exception e) {
                        System.err.println(ps.size() + " " + e);
                        System.exit(3);
                    }
                }
            }
        }
    """), LIMITED, slow_runtime=True),
    Case("go-spawnbomb", "go", src("""
        package main
        import (
            "fmt"
            "os"
            "os/exec"
        )
        func main() {
            for i := 0; ; i++ {
                cmd := exec.Command("/bin/sh", "-c", "sleep 30; : @TAG@")
                if err := cmd.Start(); err != nil {
                    fmt.Fprintln(os.Stderr, i, err)
                    os.Exit(3)
                }
            }
        }
    """), LIMITED, slow_runtime=True),
    # --- memory bombs: the cgroup's OOM kill (or the JVM's own heap cap) ---------------------
    Case("py-membomb", "python", src("""
        keep = []
        while True:
            keep.append(b"x" * (16 << 20))
    """), frozenset({"memory_limit"})),
    Case("cpp-membomb", "cpp", src("""
        #include <cstdlib>
        #include <vector>
        int main() {
            std::vector<char*> keep;
            for (;;) {
                volatile char* p = (volatile char*)malloc(16 << 20);
                if (!p) return 3;
                for (long i = 0; i < (16 << 20); i += 4096) p[i] = 1;  // touch every page
                keep.push_back((char*)p);
            }
        }
    """), frozenset({"memory_limit"})),
    Case("rb-membomb", "ruby", src("""
        keep = []
        loop { keep << ("x" * (16 << 20)) }
    """), frozenset({"memory_limit"})),
    Case("java-membomb", "java", src("""
        import java.util.*;
        public class Main {
            public static void main(String[] a) {
                List<long[]> keep = new ArrayList<>();
                while (true) keep.add(new long[1 << 20]);
            }
        }
    """), frozenset({"memory_limit"}), slow_runtime=True),
    Case("go-membomb", "go", src("""
        package main
        var keep [][]byte
        func main() {
            for {
                b := make([]byte, 16<<20)
                for j := 0; j < len(b); j += 4096 { b[j] = 1 }
                keep = append(keep, b)
            }
        }
    """), frozenset({"memory_limit"}), slow_runtime=True),
    # --- time: CPU burnt in one or many threads, or the wall clock slept away --------------
    Case("py-busy", "python", "while True:\n    pass\n", frozenset({"time_limit"})),
    Case("py-sleep", "python", "import time\ntime.sleep(30)\n", frozenset({"time_limit"})),
    Case("cpp-threads", "cpp", src("""
        #include <atomic>
        #include <thread>
        #include <vector>
        std::atomic<unsigned long> n{0};
        int main() {
            std::vector<std::thread> ts;
            for (int i = 0; i < 4; i++) ts.emplace_back([] { for (;;) n++; });
            for (auto& t : ts) t.join();
        }
    """), frozenset({"time_limit"})),
    Case("java-threads", "java", src("""
        public class Main {
            static volatile long n;
            public static void main(String[] a) {
                for (int i = 0; i < 4; i++) new Thread(() -> { while (true) n++; }).start();
                while (true) n++;
            }
        }
    """), frozenset({"time_limit"}), slow_runtime=True),
    Case("go-threads", "go", src("""
        package main
        import "sync"
        var n [8]int
        func main() {
            var wg sync.WaitGroup
            for i := 0; i < 4; i++ {
                wg.Add(1)
                go func(i int) { for { n[i]++ } }(i)
            }
            wg.Wait()
        }
    """), frozenset({"time_limit"}), slow_runtime=True),
    # --- output floods: killed once a stream passes output_bytes -----------------------------
    Case("py-stdout-flood", "python", src("""
        import sys
        while True:
            sys.stdout.write("x" * 4096)
    """), frozenset({"output_limit"})),
    Case("py-stderr-flood", "python", src("""
        import sys
        while True:
            sys.stderr.write("y" * 4096)
    """), frozenset({"output_limit"})),
    Case("cpp-stderr-flood", "cpp", src("""
        #include <cstdio>
        #include <cstring>
        int main() {
            char b[4096];
            memset(b, 'e', sizeof b);
            for (;;) fwrite(b, 1, sizeof b, stderr);
        }
    """), frozenset({"output_limit"})),
    Case("rb-stdout-flood", "ruby", 'loop { $stdout.write("z" * 4096) }\n',
         frozenset({"output_limit"})),
    Case("java-println-flood", "java", src("""
        public class Main {
            public static void main(String[] a) {
                String s = "x".repeat(100);
                while (true) System.out.println(s);
            }
        }
    """), frozenset({"output_limit"}), slow_runtime=True),
    # --- exit statuses that look like signals: a crash, never a limit ------------------------
    Case("cpp-exit152", "cpp", "int main() { return 152; }\n", frozenset({"runtime_error"}),
         exit_code=152),  # 128 + SIGXCPU
    Case("py-exit153", "python", "import sys\nsys.exit(153)\n", frozenset({"runtime_error"}),
         exit_code=153),  # 128 + SIGXFSZ
    Case("py-exit137", "python", "import sys\nsys.exit(137)\n", frozenset({"runtime_error"}),
         exit_code=137),  # 128 + SIGKILL: what an OOM kill looks like
    Case("py-bigfile", "python", src("""
        with open("/tmp/big", "wb") as f:  # over the tmpfs cap and RLIMIT_FSIZE (tmpfs_mb)
            f.write(b"x" * (20 << 20))
    """), frozenset({"runtime_error"})),
    # --- the file system: nothing of the host is writable, nothing private readable ---------
    Case("py-writes", "python", PY_REPORT + src(f"""
        for d in {WRITE_DIRS!r}:
            report(f"write:{{d}}", lambda: open(f"{{d}}/@TAG@", "w").write("x"))
        report("mkdir:/usr/local", lambda: os.mkdir("/usr/local/@TAG@"))
        report("rename:/app/main.py", lambda: os.rename("/app/main.py", "/app/@TAG@"))
        report("chmod:/app/main.py", lambda: os.chmod("/app/main.py", 0o777))
        report("symlink:/app", lambda: os.symlink("/etc/shadow", "/app/@TAG@"))
    """), PASS,
         denied=(*(f"write:{d}" for d in WRITE_DIRS), "mkdir:/usr/local", "rename:/app/main.py",
                 "chmod:/app/main.py", "symlink:/app"),
         host_paths=(*(f"{d}/@TAG@" for d in WRITE_DIRS), f"{HOST_REPO}/@TAG@")),
    Case("py-writes-root", "python", PY_REPORT + src("""
        def fill(d, mb):
            for i in range(mb * 2):
                with open(f"{d}/@TAG@-{i}", "wb") as f:
                    f.write(b"x" * (1 << 19))
            return f"{mb} MB"

        report("write:/etc", lambda: open("/etc/@TAG@", "w").write("x"))
        report("write:/etc/ld.so.preload", lambda: open("/etc/ld.so.preload", "w").write(""))
        report("mkdir:/", lambda: os.mkdir("/@TAG@"))
        report("write:/dev", lambda: open("/dev/@TAG@", "w").write("x"))
        report("fill:/etc", lambda: fill("/etc", 48))  # 3 x tmpfs_mb
    """), PASS,
         denied=("write:/etc", "write:/etc/ld.so.preload", "mkdir:/", "write:/dev", "fill:/etc"),
         host_paths=("/etc/@TAG@", "/@TAG@", "/dev/@TAG@", "/etc/@TAG@-0")),
    Case("py-reads", "python", PY_REPORT + src(f"""
        report("read:/etc/shadow", lambda: open("/etc/shadow").read()[:30])
        report("read:/work/main/README.md", lambda: open("/work/main/README.md").read()[:30])
        report("read:repo", lambda: open("{HOST_REPO}/README.md").read()[:30])
        report("list:/root", lambda: os.listdir("/root"))
        report("list:/home", lambda: os.listdir("/home"))
        report("read:/etc/passwd", lambda: open("/etc/passwd").read()[:30])
        report("list:/sys/fs/cgroup", lambda: os.listdir("/sys/fs/cgroup"))
    """), PASS,
         denied=("read:/etc/shadow", "read:/work/main/README.md", "read:repo", "list:/root",
                 "list:/home", "read:/etc/passwd", "list:/sys/fs/cgroup")),
    Case("rb-files", "ruby", RB_REPORT + src("""
        report("read:/etc/shadow") { File.read("/etc/shadow") }
        report("read:/work/main/README.md") { File.read("/work/main/README.md") }
        report("write:/root") { File.write("/root/@TAG@", "x") }
        report("write:/usr/local") { File.write("/usr/local/@TAG@", "x") }
    """), PASS,
         denied=("read:/etc/shadow", "read:/work/main/README.md", "write:/root",
                 "write:/usr/local"),
         host_paths=("/root/@TAG@", "/usr/local/@TAG@")),
    Case("java-files-net", "java", src("""
        import java.net.*;
        import java.nio.file.*;
        public class Main {
            interface Attempt { Object run() throws Exception; }
            static void report(String label, Attempt a) {
                String line, note;
                try { Object r = a.run(); line = label + " ALLOWED"; note = String.valueOf(r); }
                catch (Throwable e) { line = label + " DENIED"; note = e.toString(); }
                System.out.println(line);
                System.err.println(line + " " + note);
            }
            public static void main(String[] args) {
                report("read:/etc/shadow", () -> Files.readAllBytes(Paths.get("/etc/shadow")));
                report("write:/usr", () -> Files.write(Paths.get("/usr/@TAG@"), new byte[] {1}));
                report("tcp:host", () -> {
                    try (Socket s = new Socket()) {
                        s.connect(new InetSocketAddress("127.0.0.1", @PORT@), 1000);
                    }
                    return null;
                });
                report("dns", () -> InetAddress.getByName("example.com"));
                report("env:HF_TOKEN", () -> {
                    String v = System.getenv("HF_TOKEN");
                    if (v == null) throw new Exception("unset");
                    return v;
                });
            }
        }
    """), PASS, denied=("read:/etc/shadow", "write:/usr", "tcp:host", "dns", "env:HF_TOKEN"),
         host_paths=("/usr/@TAG@",), slow_runtime=True),
    # --- /proc and descriptors: no way to the host's sysctls or the stdin/stdout files -------
    Case("py-proc", "python", PY_REPORT + src("""
        for p in ("/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches",
                  "/proc/sysrq-trigger", "/proc/self/fd/0"):
            report(f"open-w:{p}", lambda: os.close(os.open(p, os.O_WRONLY)))
        report("open-rw:/proc/self/fd/0", lambda: os.close(os.open("/proc/self/fd/0", os.O_RDWR)))
        report("truncate:/proc/self/fd/0", lambda: os.truncate("/proc/self/fd/0", 0))
    """), PASS, input="some input\n",
         denied=("open-w:/proc/sys/kernel/core_pattern", "open-w:/proc/sys/vm/drop_caches",
                 "open-w:/proc/sysrq-trigger", "open-w:/proc/self/fd/0",
                 "open-rw:/proc/self/fd/0", "truncate:/proc/self/fd/0")),
    Case("cpp-fds", "cpp", CPP_REPORT + src("""
        int main() {
            report("fchmod:1", fchmod(1, 0666));
            report("fchmod:0", fchmod(0, 0666));
            report("fchown:0", fchown(0, 65534, 65534));
            report("fallocate:1", fallocate(1, FALLOC_FL_KEEP_SIZE, 0, 1LL << 30));
            report("fallocate:2", fallocate(2, 0, 0, 1LL << 30));
            report("fallocate:0", fallocate(0, FALLOC_FL_KEEP_SIZE, 0, 1LL << 30));
            report("ftruncate:0", ftruncate(0, 0));
            report("write:0", write(0, "x", 1));
            report("reopen-w:/proc/self/fd/0", open("/proc/self/fd/0", O_WRONLY));
            report("reopen-rw:/proc/self/fd/0", open("/proc/self/fd/0", O_RDWR | O_APPEND));
        }
    """), PASS, input="some input\n",
         denied=("fchmod:1", "fchmod:0", "fchown:0", "fallocate:1", "fallocate:2", "fallocate:0",
                 "ftruncate:0", "write:0", "reopen-w:/proc/self/fd/0",
                 "reopen-rw:/proc/self/fd/0")),
    # --- secrets: the caller's environment never reaches the program ------------------------
    Case("py-env", "python", PY_REPORT + src("""
        def environs():
            hits = []
            for pid in os.listdir("/proc"):
                try:
                    data = open(f"/proc/{pid}/environ", "rb").read()
                except OSError:
                    continue
                if b"HF_TOKEN" in data or b"hf_" in data:
                    hits.append(pid)
            return found(hits)

        report("env:HF_TOKEN", lambda: found([k for k in os.environ if "TOKEN" in k]))
        report("environ:any", environs)
    """), PASS, denied=("env:HF_TOKEN", "environ:any")),
    Case("rb-env", "ruby", RB_REPORT + 'report("env:HF_TOKEN") { ENV.fetch("HF_TOKEN") }\n',
         PASS, denied=("env:HF_TOKEN",)),
    # --- network: no route out, not even to the host's loopback or abstract sockets ---------
    Case("py-net", "python", PY_REPORT + src(r"""
        def udp():
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("8.8.8.8", 53))

        report("tcp:host", lambda: socket.create_connection(("127.0.0.1", @PORT@), 1).close())
        report("tcp:1.1.1.1", lambda: socket.create_connection(("1.1.1.1", 53), 1).close())
        report("udp:8.8.8.8", udp)
        report("dns", lambda: socket.getaddrinfo("example.com", 80))
        report("unix:abstract", lambda: socket.socket(socket.AF_UNIX).connect("\0@TAG@"))
    """), PASS, denied=("tcp:host", "tcp:1.1.1.1", "udp:8.8.8.8", "dns", "unix:abstract")),
    Case("rb-net", "ruby", RB_REPORT + src("""
        report("tcp:host") { Socket.tcp("127.0.0.1", @PORT@, connect_timeout: 1).close }
        report("tcp:1.1.1.1") { Socket.tcp("1.1.1.1", 53, connect_timeout: 1).close }
        report("dns") { Addrinfo.getaddrinfo("example.com", 80) }
    """), PASS, denied=("tcp:host", "tcp:1.1.1.1", "dns")),
    Case("go-net", "go", src("""
        package main
        import (
            "fmt"
            "net"
            "os"
            "time"
        )
        func report(label string, err error) {
            what := "ALLOWED"
            if err != nil { what = "DENIED" }
            fmt.Println(label, what)
            fmt.Fprintln(os.Stderr, label, what, err)
        }
        func dial(addr string) error {
            c, err := net.DialTimeout("tcp", addr, time.Second)
            if err == nil { c.Close() }
            return err
        }
        func main() {
            report("tcp:host", dial("127.0.0.1:@PORT@"))
            report("tcp:1.1.1.1", dial("1.1.1.1:53"))
            _, err := net.LookupHost("example.com")
            report("dns", err)
            _, err = os.ReadFile("/etc/shadow")
            report("read:/etc/shadow", err)
        }
    """), PASS, denied=("tcp:host", "tcp:1.1.1.1", "dns", "read:/etc/shadow"), slow_runtime=True),
    # --- signals: nothing outside the sandbox's PID namespace can be reached -----------------
    Case("py-kill", "python", src("""
        import os, signal, sys
        for pid in (os.getppid(), 1, -1, @HOSTPID@, @HOSTPPID@):  # the last two: pytest's
            try:
                os.kill(pid, signal.SIGKILL)
                r = "sent"
            except OSError as err:
                r = repr(err)
            print(pid, r, file=sys.stderr)
        print("ALIVE")
    """), PASS, output="ALIVE\n"),
    Case("cpp-kill", "cpp", src("""
        #include <csignal>
        #include <cstdio>
        #include <unistd.h>
        int main() {
            kill(getppid(), SIGKILL);
            kill(1, SIGKILL);
            kill(-1, SIGKILL);
            kill(@HOSTPID@, SIGKILL);
            puts("ALIVE");
        }
    """), PASS, output="ALIVE\n"),
    # --- escaping the run: daemons die with the sandbox ------------------------------------
    Case("py-daemon", "python", src("""
        import os
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                null = os.open("/dev/null", os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.execv("/bin/sh", ["sh", "-c", "sleep 30; : @TAG@"])
            os._exit(0)
        os.wait()
        print("DETACHED")
    """), PASS, output="DETACHED\n"),
    Case("rb-daemon", "ruby", src("""
        puts "DETACHED"
        $stdout.flush
        Process.daemon(true, true)
        $0 = "@TAG@ daemon"
        sleep 30
    """), PASS, output="DETACHED\n"),
    # --- writable space is private and capped ----------------------------------------------
    Case("py-fill", "python", src("""
        import errno, os
        def fill(d):
            total = 0
            for i in range(1000):
                fd = os.open(f"{d}/@TAG@-{i}", os.O_WRONLY | os.O_CREAT)
                try:
                    for _ in range(4):
                        total += os.write(fd, b"x" * 131072)
                except OSError as err:
                    return total, err.errno
                finally:
                    os.close(fd)
            return total, None
        for d in ("/tmp", "/dev/shm", "/work"):
            total, err = fill(d)
            capped = err == errno.ENOSPC and total <= (16 << 20)
            print(d, "CAPPED" if capped else f"UNCAPPED {total} {err}")
    """), PASS, output="/tmp CAPPED\n/dev/shm CAPPED\n/work CAPPED\n",
         host_paths=("/tmp/@TAG@-0", "/dev/shm/@TAG@-0", "/work/@TAG@-0")),
    Case("py-socket-memory", "python", PY_REPORT + src(f"""
        CAP = {SOCKET_CAP_MB} << 20  # the run's memory_mb
    """) + src("""
        def closing(attempt):  # holds more than twice the memory cap in socket buffers?
            socks = []
            try:
                held = attempt(socks)
            finally:
                for s in socks:
                    s.close()
            if held >= 2 * CAP:
                return f"{held >> 20} MB held"
            raise LookupError(f"only {held >> 20} MB held")

        def tcp(socks):
            lst = socket.socket()
            lst.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
            lst.bind(("127.0.0.1", 0))
            lst.listen(128)
            socks.append(lst)
            held = 0
            while held < 2 * CAP and len(socks) < 160:
                c = socket.socket()
                c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
                c.connect(lst.getsockname())
                socks += [c, lst.accept()[0]]
                c.setblocking(False)
                try:
                    while held < 2 * CAP:
                        held += c.send(b"t" * (1 << 20))
                except BlockingIOError:
                    pass
            return held

        def datagrams(family, kind, proto, address, message, socks):
            sender = socket.socket(family, kind, proto)
            sender.bind(address)
            sender.setblocking(False)
            socks.append(sender)
            receivers = []
            for _ in range(20):
                r = socket.socket(family, kind, proto)
                r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
                r.bind(address)
                socks.append(r)
                receivers.append(r)
                for _ in range(200):
                    try:
                        sender.sendto(message, r.getsockname())
                    except OSError:
                        break
            held = 0  # what the receivers' queues held at once
            for r in receivers:
                r.setblocking(False)
                while True:
                    try:
                        held += len(r.recv(1 << 16))
                    except BlockingIOError:
                        break
            return held

        def udp(socks):
            return datagrams(socket.AF_INET, socket.SOCK_DGRAM, 0, ("127.0.0.1", 0),
                             b"u" * 60000, socks)

        def netlink(socks):  # NETLINK_USERSOCK (2): unprivileged peers may message each other
            message = (60000).to_bytes(4, "little") + bytes(12) + b"n" * (60000 - 16)
            return datagrams(socket.AF_NETLINK, socket.SOCK_RAW, 2, (0, 0), message, socks)

        for label, attempt in (("tcp", tcp), ("udp", udp), ("netlink", netlink)):
            report(f"{label}:beyond-memory-cap", lambda: closing(attempt))
    """), frozenset({"pass", "memory_limit"}), memory_mb=SOCKET_CAP_MB,
         denied=("tcp:beyond-memory-cap", "udp:beyond-memory-cap", "netlink:beyond-memory-cap")),
    # --- privileges: no new namespaces, no setuid, no mounts, no devices ---------------------
    Case("py-privileges", "python", PY_REPORT + src(r"""
        def run(*argv):
            return subprocess.run(argv, stderr=subprocess.DEVNULL).returncode

        def fds():
            names = os.listdir("/proc/self/fd")  # the listing's own descriptor is closed now
            live = [n for n in names if os.path.exists(f"/proc/self/fd/{n}")]
            return found(sorted(set(live) - {"0", "1", "2"}))

        status = open("/proc/self/status").read()
        report("unshare:user", lambda: ok(libc.unshare(0x10000000)))
        report("unshare:user+mount", lambda: ok(libc.unshare(0x10020000)))
        report("unshare:net", lambda: ok(libc.unshare(0x40000000)))
        report("unshare(1)", lambda: ok(run("/usr/bin/unshare", "-U", "true")))
        report("setuid:mount", lambda: ok(run("/usr/bin/mount", "-t", "tmpfs", "none", "/tmp")))
        report("setuid(0)", lambda: os.setuid(0))
        report("chroot", lambda: os.chroot("/tmp"))
        report("mknod", lambda: os.mknod("/tmp/null", 0o20666, os.makedev(1, 3)))
        report("open:/dev/tty", lambda: open("/dev/tty", "w"))
        report("new-privs", lambda: found("NoNewPrivs:\t1" not in status))
        report("capabilities", lambda: found("CapEff:\t0000000000000000" not in status))
        report("inherited-fds", fds)
        report("host-processes", lambda: found(
            [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())]))
    """), PASS,
         denied=("unshare:user", "unshare:user+mount", "unshare:net", "unshare(1)",
                 "setuid:mount", "setuid(0)", "chroot", "mknod", "open:/dev/tty", "new-privs",
                 "capabilities", "inherited-fds", "host-processes")),
    # --- the compiler reads nothing private either, and an endless source is stopped --------
    Case("cpp-include-shadow", "cpp", '#include "/etc/shadow"\nint main() {}\n',
         frozenset({"compile_error"})),
    Case("cpp-include-repo", "cpp", f'#include "{HOST_REPO}/README.md"\nint main() {{}}\n',
         frozenset({"compile_error"})),
    Case("cpp-include-root", "cpp", '#include "/root/.bashrc"\nint main() {}\n',
         frozenset({"compile_error"})),
    Case("cpp-include-devzero", "cpp", '#include "/dev/zero"\nint main() {}\n',
         frozenset({"compile_error"})),  # the build's own memory cap stops it
    # --- issue 13: IPC objects, deep trees, the process cap, host paths, our own errors ------
    Case("py-ipc", "python", src("""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        libc.shmat.restype = ctypes.c_void_p
        shm = libc.shmget(0x7A6, 64 << 20, 0o1000 | 0o666)
        ctypes.memset(libc.shmat(shm, None, 0), 1, 64 << 20)  # 64 MB pinned past the run
        made = [shm, libc.msgget(0x7A6, 0o1000 | 0o666), libc.semget(0x7A6, 4, 0o1000 | 0o666),
                libc.mq_open(b"/@TAG@", os.O_CREAT | os.O_RDWR, 0o666, None)]
        print("MADE" if min(made) >= 0 else f"FAILED {made}")
    """), PASS, output="MADE\n"),
    Case("py-deep-tree", "python", src("""
        import os
        for top in ("/work", "/tmp", "/dev/shm"):
            os.chdir(top)
            for _ in range(300):  # deeper than a descriptor per level allows (256)
                os.mkdir("@TAG@")
                os.chdir("@TAG@")
            open("bottom", "wb").write(b"x" * (4 << 20))
        print("PLANTED")
    """), PASS, output="PLANTED\n"),
    Case("java-thread-cap", "java", src("""
        public class Main {
            public static void main(String[] a) {
                for (int i = 0; i < 200; i++) {
                    Thread t = new Thread(() -> {
                        try { Thread.sleep(100000); } catch (InterruptedException e) { }
                    });
                    t.setDaemon(true);
                    t.start();
                }
            }
        }
    """), frozenset({"process_limit"}), slow_runtime=True),
    Case("py-mountinfo", "python", PY_REPORT + src("""
        def host_paths():
            roots = [line.split()[3] for line in open("/proc/self/mountinfo")]
            return found([r for r in roots if "coreb" in r or r.startswith("@WORKROOT@")])

        report("mountinfo:host-paths", host_paths)
    """), PASS, denied=("mountinfo:host-paths",)),
    Case("py-forged-setup-error", "python", src("""
        import sys
        print("bwrap: Can't find source path /app: Permission denied", file=sys.stderr)
        sys.exit(1)
    """), frozenset({"runtime_error"}), exit_code=1),
    Case("py-huge-source", "python", "x=1\n" * 1_500_000, frozenset({"compile_error"})),
]  # fmt: skip
BY_ID = {case.id: case for case in CASES}
assert len(BY_ID) == len(CASES)


@dataclass
class Run:
    results: dict[str, dict]
    work_root: Path
    cgroups: list[Path]  # every cgroup directory the runs created
    seconds: float
    leftovers_gone_after_s: float | None  # after execute(); None: tagged processes survive
    tcp_accepted: bool
    unix_accepted: bool
    ipc_before: set[str]  # the host's IPC objects before the batch
    ipc_after: set[str]
    temp_before: set[str]  # the temporary folder's entries before the batch
    temp_after: set[str]


def _host_ipc() -> set[str]:
    """The host's IPC objects: SysV shared memory, queues, semaphores; POSIX queues."""
    objects = set()
    for kind in ("shm", "msg", "sem"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]:
                objects.add(f"{kind}:{line.split()[1]}")
    with contextlib.suppress(OSError):
        objects.update(f"mq:{name}" for name in os.listdir("/dev/mqueue"))
    return objects


def _descendants(pid: int) -> list[int]:
    """Live processes descending from ``pid``."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                text = (entry / "stat").read_text()
                parents[int(entry.name)] = int(text[text.rindex(")") + 2 :].split()[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += kids
        frontier += kids
    return found


def _temp_entries() -> set[str]:
    return {p.name for root in {Path(tempfile.gettempdir()), temp_root()} for p in root.iterdir()}


def _tagged_processes() -> list[str]:
    hits = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            text = (entry / "cmdline").read_bytes() + (entry / "comm").read_bytes()
            if TAG.encode() in text:
                hits.append(entry.name)
    return hits


def _accepted(listener: socket.socket) -> bool:
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


@pytest.fixture(scope="module")
def run():
    work_root = Path(tempfile.mkdtemp(prefix="coreb-adversarial-", dir="/tmp"))
    work_root.chmod(0o711)  # traversable by the sandbox user
    tcp = socket.create_server(("127.0.0.1", 0))  # the host's: must never see a connection
    tcp.setblocking(False)
    unix = socket.socket(socket.AF_UNIX)
    unix.bind("\0" + TAG)
    unix.listen()
    unix.setblocking(False)
    subs = {
        "@TAG@": TAG,
        "@PORT@": str(tcp.getsockname()[1]),
        "@HOSTPID@": str(os.getpid()),
        "@HOSTPPID@": str(os.getppid()),
        "@WORKROOT@": str(work_root),
    }
    ipc_before, temp_before = _host_ipc(), _temp_entries()
    cgroups: list[Path] = []
    real_init = isolation_module.CGroup.__init__

    def recording_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        cgroups.extend(self.paths.values())

    results: dict[str, dict] = {}
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("HF_TOKEN", SECRET)
            mp.setattr(isolation_module.CGroup, "__init__", recording_init)
            start = time.monotonic()
            for limits, slow in ((SMALL, False), (BIG, True)):
                batch = [c.candidate(subs) for c in CASES if c.slow_runtime is slow]
                config = ExecutionConfig(limits=limits, work_root=str(work_root))
                results.update({r["id"]: r for r in execute(batch, config)})
            seconds = time.monotonic() - start
        done = time.monotonic()
        gone_after: float | None = None
        while time.monotonic() - done < 1.0:
            if not _tagged_processes():
                gone_after = time.monotonic() - done
                break
            time.sleep(0.05)
        gc.collect()  # the executors' build caches are removed when they are collected
        yield Run(
            results,
            work_root,
            cgroups,
            seconds,
            gone_after,
            _accepted(tcp),
            _accepted(unix),
            ipc_before,
            _host_ipc(),
            temp_before,
            _temp_entries(),
        )
    finally:
        tcp.close()
        unix.close()
        shutil.rmtree(work_root, ignore_errors=True)


def _why(result: dict) -> str:
    shown = {k: result[k] for k in ("verdicts", "compile", "tests")}
    return json.dumps(shown, indent=1)[-3000:]


def _host_side_effects(run: Run, case: Case) -> list[str]:
    """What the program left on the host (empty: nothing)."""
    problems = [f"{p} exists" for p in case.host_paths if os.path.lexists(p.replace("@TAG@", TAG))]
    if SECRET in json.dumps(run.results[case.id]):
        problems.append("the caller's HF_TOKEN appears in the result")
    if run.leftovers_gone_after_s is None:
        problems.append(f"tagged processes survive: {_tagged_processes()}")
    if run.tcp_accepted or run.unix_accepted:
        problems.append("a connection reached a listener of the host")
    return problems


@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_program(run, case_id):
    case = BY_ID[case_id]
    result = run.results[case_id]
    assert _host_side_effects(run, case) == []
    [test] = result["tests"]
    assert result["isolation"] == "bubblewrap"
    assert result["accounting"] == "cgroup"
    assert test["verdict"] in case.verdicts, _why(result)
    if case.exit_code is not None:
        assert test["exit_code"] == case.exit_code


def test_no_process_of_the_batch_survives(run):
    # Daemons, fork bombs and spawned children die with their run.
    assert run.leftovers_gone_after_s is not None, _tagged_processes()
    assert run.leftovers_gone_after_s < 1.0


def test_every_cgroup_is_removed(run):
    n_runs = sum("exit_code" in t for r in run.results.values() for t in r["tests"])
    assert len(run.cgroups) >= 3 * n_runs  # memory, pids and cpuacct for every test run
    assert [p for p in run.cgroups if p.exists()] == []


def test_work_root_is_left_empty(run):
    assert list(run.work_root.iterdir()) == []


def test_no_connection_reaches_the_host(run):
    assert not run.tcp_accepted
    assert not run.unix_accepted


def test_the_secret_never_leaks(run):
    dumped = json.dumps(run.results)
    assert SECRET not in dumped
    assert "HF_TOKEN=" not in dumped


def test_pytest_and_its_parent_survive(run):
    for pid in (os.getpid(), os.getppid()):
        os.kill(pid, 0)  # raises ProcessLookupError if gone
    assert run.results["py-kill"]["verdicts"] == ["pass"]
    assert run.results["cpp-kill"]["verdicts"] == ["pass"]


def test_compile_errors_leak_no_line_of_the_host_shadow_file(run):
    stderr = run.results["cpp-include-shadow"]["compile"]["stderr"]
    assert "No such file or directory" in stderr, stderr
    try:
        shadow = Path("/etc/shadow").read_text()
    except OSError:
        pytest.skip("the host's /etc/shadow is not readable by this user")
    for line in filter(None, map(str.strip, shadow.splitlines())):
        assert line not in stderr
        password = line.split(":")[1] if line.count(":") else ""
        if len(password) > 2:  # a real hash, not "*" or "!"
            assert password not in stderr


def test_limits_stop_programs_early(run):
    for case in CASES:
        [test] = run.results[case.id]["tests"]
        limits = BIG if case.slow_runtime else SMALL
        if test["verdict"] in ("time_limit", "memory_limit", "output_limit"):
            assert test["wall_time_s"] < limits.wall_time_s + 1.0, case.id
        if test.get("cpu_time_s") is not None:
            # CPU time is polled every 50 ms: a few polls of slack, threads on two cores.
            assert test["cpu_time_s"] < limits.cpu_time_s + 0.5, case.id


def test_nothing_of_ours_is_left_on_the_host(run):
    """After the whole hostile batch: no process, cgroup, IPC object or temp folder of ours."""
    assert _descendants(os.getpid()) == []  # every sandbox, monitor and build has ended
    tag = owner_tag()
    left = [p for c in CONTROLLERS for p in (CGROUP_ROOT / c).glob(f"coreb-*-{tag}-*")]
    assert left == []
    assert run.ipc_after - run.ipc_before == set()  # what py-ipc made died with its namespace
    ours = {name for name in run.temp_after - run.temp_before if name.startswith("coreb-")}
    assert ours == set()
    assert list(run.work_root.iterdir()) == []


def test_batch_runtime(run):
    assert run.seconds < 120
