/* Preloaded before libfaketime on a test "machine" whose wall clock is faked
 * (tests/support/fakeclock.py): a sleep on the monotonic clock goes straight to the kernel.
 *
 * With FAKETIME_DONT_FAKE_MONOTONIC=1, Debian's libfaketime 0.9.10 still moves the deadline
 * of clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ...) by the fake offset: Python's
 * time.sleep, which sleeps that way, fails with EINVAL 25 h ahead and sleeps 2 min too long
 * 2 min behind (wolfcw/libfaketime#426). A machine whose clock is wrong still sleeps right;
 * only its wall clock differs. Sleeps on the wall clock stay libfaketime's. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_nanosleep_fn)(clockid_t, int, const struct timespec *, struct timespec *);

int clock_nanosleep(clockid_t clock, int flags, const struct timespec *request,
                    struct timespec *remain) {
    if (clock == CLOCK_MONOTONIC) {
        return syscall(SYS_clock_nanosleep, clock, flags, request, remain) == 0 ? 0 : errno;
    }
    clock_nanosleep_fn next = (clock_nanosleep_fn)dlsym(RTLD_NEXT, "clock_nanosleep");
    return next(clock, flags, request, remain);
}
