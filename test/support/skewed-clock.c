// Shifts one process's wall clock (CLOCK_REALTIME, gettimeofday, time) by SKEWED_CLOCK_MS
// milliseconds, loaded with LD_PRELOAD: a redis-server whose clock is behind or ahead of the
// others'. libfaketime does this in general, but it cannot start redis-server (its dlsym during
// jemalloc's start-up recurses into clock_gettime), so this reads the kernel's clock with a raw
// system call and never calls back into the C library's clock. Monotonic clocks are untouched.
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long skew_ns(void) {
  static volatile int known;
  static long long ns;
  if (!known) {
    const char *ms = getenv("SKEWED_CLOCK_MS");
    ns = ms ? atoll(ms) * 1000000LL : 0;
    known = 1;
  }
  return ns;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  int r = (int)syscall(SYS_clock_gettime, id, ts);
  if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
    long long t = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + skew_ns();
    ts->tv_sec = t / 1000000000LL;
    ts->tv_nsec = t % 1000000000LL;
  }
  return r;
}

int gettimeofday(struct timeval *__restrict tv, void *__restrict tz) {
  (void)tz;
  struct timespec ts;
  int r = clock_gettime(CLOCK_REALTIME, &ts);
  if (r == 0) {
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
  }
  return r;
}

time_t time(time_t *out) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out) *out = ts.tv_sec;
  return ts.tv_sec;
}
