/*
 * The sandbox's resident runner: PID 1 of one bubblewrap sandbox that runs every test of one
 * candidate, one fresh process per test, so the sandbox and its cgroups are set up once per
 * candidate rather than once per test (see coreb_toolkit/sandbox/session.py, SandboxSession).
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
 * reaches every other process of the namespace; orphans are reparented here and reaped), the
 * writable places (/work, /tmp, /dev/shm) are emptied at any depth, and every IPC object (SysV
 * shared memory, message queues, semaphores; POSIX message queues) is removed, so each test
 * starts as a fresh run does.
 * As PID 1 the zygote cannot be killed from inside the sandbox (the kernel drops SIGKILL and
 * SIGSTOP sent to a namespace's init from within), and it is not dumpable, so a test cannot
 * ptrace it or read its memory.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const WRITABLE[] = {"/work", "/tmp", "/dev/shm"};
#define MQUEUE_DIR "/dev/mqueue"

/* A name not used in the directory open at fd, for a subtree moved up to it. */
static unsigned long moved_count;

/* Empty one directory (open at fd, inside the directory open at top_fd): remove its files and
 * empty subdirectories, and move every non-empty subdirectory up into top_fd, so each directory
 * is read once and only two descriptors are open at any depth (a recursion holding one per
 * level ran out of descriptors below ~250 levels and left the tree, and its space, behind).
 * Returns whether anything was removed or moved. */
static int flatten_into(int top_fd, int fd) {
    DIR *dir = fdopendir(fd);
    if (dir == NULL) {
        close(fd);
        return 0;
    }
    int progress = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        const char *name = entry->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
        if (unlinkat(fd, name, 0) == 0 || unlinkat(fd, name, AT_REMOVEDIR) == 0) {
            progress = 1;
            continue;
        }
        /* a non-empty directory, maybe one the test made unreadable: open it up, move it up */
        fchmodat(fd, name, 0700, 0);
        for (int tries = 0; tries < 1000; tries++) {
            char moved[64];
            snprintf(moved, sizeof moved, ".coreb-moved-%lu", moved_count++);
            if (syscall(SYS_renameat2, fd, name, top_fd, moved, RENAME_NOREPLACE) == 0) {
                progress = 1;
                break;
            }
            if (errno != EEXIST) break;
        }
    }
    closedir(dir);
    return progress;
}

/* Remove everything inside the directory open at top_fd (not the directory itself), at any
 * depth: subtrees are flattened into top_fd until nothing is left. */
static void empty_dir(int top_fd) {
    for (;;) {
        int sub = dup(top_fd);
        DIR *dir = sub >= 0 ? fdopendir(sub) : NULL;
        if (dir == NULL) {
            if (sub >= 0) close(sub);
            return;
        }
        rewinddir(dir); /* the duplicate shares top_fd's offset, left at the end by a pass */
        int left = 0, progress = 0;
        struct dirent *entry;
        while ((entry = readdir(dir)) != NULL) {
            const char *name = entry->d_name;
            if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
            if (unlinkat(top_fd, name, 0) == 0 || unlinkat(top_fd, name, AT_REMOVEDIR) == 0) {
                progress = 1;
                continue;
            }
            left = 1;
            fchmodat(top_fd, name, 0700, 0);
            int fd = openat(top_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0) progress |= flatten_into(top_fd, fd);
            if (unlinkat(top_fd, name, AT_REMOVEDIR) == 0) progress = 1;
        }
        closedir(dir);
        if (!left || !progress) return; /* empty, or nothing more can go (never seen) */
    }
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
        if (fd >= 0) {
            empty_dir(fd);
            close(fd);
        }
    }
}

/* Remove the SysV objects listed in /proc/sysvipc/<kind> (this IPC namespace's, whatever their
 * modes: the listing ignores permissions, and every object's creator is the sandbox user, whose
 * identity this runner shares, so IPC_RMID is allowed). Returns how many were listed. */
static int remove_sysv(const char *kind) {
    char path[64];
    snprintf(path, sizeof path, "/proc/sysvipc/%s", kind);
    FILE *listing = fopen(path, "re");
    if (listing == NULL) return 0;
    char line[512];
    int found = 0;
    if (fgets(line, sizeof line, listing) == NULL) { /* the header */
        fclose(listing);
        return 0;
    }
    while (fgets(line, sizeof line, listing) != NULL) {
        long long key;
        int id;
        if (sscanf(line, "%lld %d", &key, &id) != 2) continue;
        found++;
        if (kind[1] == 'h') shmctl(id, IPC_RMID, NULL);
        else if (kind[1] == 's') msgctl(id, IPC_RMID, NULL);
        else semctl(id, 0, IPC_RMID);
    }
    fclose(listing);
    return found;
}

/* Remove every IPC object of the namespace: SysV shared memory, message queues and semaphore
 * sets, and POSIX message queues (listed on the sandbox's mqueue mount). These are all the
 * objects an IPC namespace holds (POSIX shared memory and semaphores are files in /dev/shm), so
 * the next test sees the empty namespace a fresh sandbox has. Removing them needs no privilege,
 * where a fresh IPC namespace per test would (CAP_SYS_ADMIN in the sandbox's user namespace). */
static void clear_ipc(void) {
    for (int pass = 0; pass < 3; pass++) {
        int found = remove_sysv("shm") + remove_sysv("msg") + remove_sysv("sem");
        DIR *queues = opendir(MQUEUE_DIR);
        if (queues != NULL) {
            struct dirent *entry;
            while ((entry = readdir(queues)) != NULL) {
                if (entry->d_name[0] == '.' &&
                    (entry->d_name[1] == '\0' || strcmp(entry->d_name, "..") == 0))
                    continue;
                /* the system call takes the name without mq_unlink()'s leading slash */
                syscall(SYS_mq_unlink, entry->d_name);
                found++;
            }
            closedir(queues);
        }
        if (found == 0) return;
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
        clear_ipc();
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
    clear_ipc();
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
