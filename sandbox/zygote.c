/*
 * The sandbox's resident runner: PID 1 of one bubblewrap sandbox that runs every test of one
 * candidate, one fresh process per test, so the sandbox and its cgroups are set up once per
 * candidate rather than once per test (see sandbox/isolation.py, SandboxSession).
 *
 *   zygote SOCKET_FD -- PROGRAM [ARG...]
 *
 * SOCKET_FD is a SOCK_SEQPACKET Unix socket to the host. The host sends one message per test:
 * the byte 'R' with three descriptors attached (stdin, stdout, stderr of the test); the zygote
 * forks, the child execs PROGRAM in /work with those descriptors, and the zygote answers
 * "X <wait status> <nanoseconds from fork to end>" once the test's process has ended and
 * nothing else of it is left. While a test runs, the byte 'K' from the host kills it. End of
 * stream: kill everything and exit. The zygote says "I" once, when it is ready.
 *
 * Between tests nothing survives: every process but this one is SIGKILLed (kill(-1) from PID 1
 * reaches every other process of the namespace; orphans are reparented here and reaped) and the
 * writable places (/work, /tmp, /dev/shm) are emptied, so each test starts as a fresh run does.
 * As PID 1 the zygote cannot be killed from inside the sandbox (the kernel drops SIGKILL and
 * SIGSTOP sent to a namespace's init from within), and it is not dumpable, so a test cannot
 * ptrace it or read its memory.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const WRITABLE[] = {"/work", "/tmp", "/dev/shm"};

/* Remove everything inside the directory open at fd (not the directory itself). */
static void empty_dir(int fd) {
    DIR *dir = fdopendir(fd);
    if (dir == NULL) {
        close(fd);
        return;
    }
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        const char *name = entry->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
        if (unlinkat(fd, name, 0) == 0) continue;
        /* a directory (or one the test made unreadable): open it up, empty it, remove it */
        fchmodat(fd, name, 0700, 0);
        int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) empty_dir(sub);
        unlinkat(fd, name, AT_REMOVEDIR);
    }
    closedir(dir);
}

#define N_WRITABLE (sizeof WRITABLE / sizeof *WRITABLE)
static mode_t writable_modes[N_WRITABLE];

static void remember_writable_modes(void) {
    for (size_t i = 0; i < N_WRITABLE; i++) {
        struct stat st;
        writable_modes[i] = stat(WRITABLE[i], &st) == 0 ? (st.st_mode & 07777) : 0755;
    }
}

/* Empty the writable places, first giving them back the modes a test may have changed. */
static void empty_writable(void) {
    for (size_t i = 0; i < N_WRITABLE; i++) {
        chmod(WRITABLE[i], writable_modes[i]);
        int fd = open(WRITABLE[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) empty_dir(fd);
    }
}

/* Kill every process of the namespace but this one, and reap them all (again and again: a
 * process forked while the first kill went round may have missed it). */
static void kill_all(void) {
    for (;;) {
        kill(-1, SIGKILL);
        pid_t done;
        while ((done = waitpid(-1, NULL, WNOHANG | __WALL)) > 0) {
        }
        if (done < 0 && errno == ECHILD) return;
        usleep(500);
    }
}

/* Receive one message; returns its length (0 at end of stream, -1 on error). */
static ssize_t receive(int sock, char *byte, int fds[3], int *n_fds) {
    char control[CMSG_SPACE(3 * sizeof(int))];
    struct iovec iov = {.iov_base = byte, .iov_len = 1};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = control, .msg_controllen = sizeof control};
    ssize_t n;
    do {
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    } while (n < 0 && errno == EINTR);
    *n_fds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < count; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (*n_fds < 3) fds[(*n_fds)++] = fd;
                else close(fd);
            }
        }
    }
    return n;
}

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Run one test: fork, exec, wait (or kill on 'K'); returns the wait status and sets *elapsed
 * to the nanoseconds from the fork to the test process's end. */
static int run_test(int sock, const int fds[3], char **argv, long long *elapsed) {
    long long start = now_ns();
    pid_t pid = fork();
    if (pid < 0) {  /* the process cap is reached: a runtime error of the test */
        dprintf(fds[2], "sandbox: cannot start the program: %s\n", strerror(errno));
        for (int i = 0; i < 3; i++) close(fds[i]);
        *elapsed = now_ns() - start;
        kill_all();
        empty_writable();
        return 126 << 8;
    }
    if (pid == 0) {
        for (int i = 0; i < 3; i++) {
            if (dup2(fds[i], i) < 0) _exit(126);
        }
        syscall(SYS_close_range, 3, ~0U, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (chdir("/work") != 0) _exit(126);
        execvp(argv[0], argv);
        dprintf(2, "sandbox: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    for (int i = 0; i < 3; i++) close(fds[i]);
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    int status = 0;
    *elapsed = 0;
    int killed = 0;
    for (;;) {
        struct pollfd polls[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = sock, .events = POLLIN}};
        int n = poll(polls, killed ? 1 : 2, pidfd >= 0 ? -1 : 10);
        if (n < 0 && errno != EINTR) break;
        /* reap what has ended: the test, or orphans reparented here */
        pid_t done;
        int st;
        int ended = 0;
        while ((done = waitpid(-1, &st, WNOHANG | __WALL)) > 0) {
            if (done == pid) {
                status = st;
                ended = 1;
            }
        }
        if (ended) {
            *elapsed = now_ns() - start;
            break;
        }
        if (!killed && n > 0 && (polls[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            char byte = 0;
            ssize_t got = recv(sock, &byte, 1, 0);
            if (got <= 0 || byte == 'K') {
                kill(-1, SIGKILL);
                killed = 1;
            }
        }
    }
    if (pidfd >= 0) close(pidfd);
    kill_all();
    empty_writable();
    return status;
}

int main(int argc, char **argv) {
    if (argc < 4 || strcmp(argv[2], "--") != 0) {
        fprintf(stderr, "usage: %s SOCKET_FD -- PROGRAM [ARG...]\n", argv[0]);
        return 2;
    }
    int sock = atoi(argv[1]);
    char **program = argv + 3;
    prctl(PR_SET_DUMPABLE, 0);
    remember_writable_modes();
    if (send(sock, "I", 1, MSG_NOSIGNAL) < 0) return 1;  /* ready */
    /* PID 1 ignores signals without a handler; SIGCHLD is only a wake-up for poll */
    for (;;) {
        char byte = 0;
        int fds[3];
        int n_fds = 0;
        ssize_t n = receive(sock, &byte, fds, &n_fds);
        if (n <= 0) break;
        if (byte != 'R' || n_fds != 3) {
            for (int i = 0; i < n_fds; i++) close(fds[i]);
            continue;
        }
        long long elapsed = 0;
        int status = run_test(sock, fds, program, &elapsed);
        char reply[64];
        int len = snprintf(reply, sizeof reply, "X %d %lld", status, elapsed);
        if (send(sock, reply, (size_t)len, MSG_NOSIGNAL) < 0) break;
    }
    kill_all();
    return 0;
}
