/*
 * holdfast's wait queue, model-checked with spin (lua/model/check.sh runs it; docs/waiting.md, "Checked by models").
 *
 * The steps, and where each lives:
 *   acquire()   lua/acquire-4.lua   settle; grant when nobody queues and it fits, else queue the waiter
 *   release()   lua/release-4.lua   drop the grant; settle, which serves the head and publishes,
 *                                   except that a waiter of the releasing server is handed the lock
 *                                   in the reply: full lease at once, no record, answered by that
 *                                   server (wait-room's releasing/handOver) without a claim
 *   claim()     lua/claim-4.lua     settle; refresh this server's queued entries; confirm the full
 *                                   lease of each of its waiters the queue has served
 *   dequeue()   lua/dequeue-4.lua   leave the queue; a grant already served to the waiter is dropped
 *   abortWait() lua/abort-wait-4.lua  deadlock detection ends a wait: if the waiter still waits (live
 *                                   entry, not served, queued), its record says aborted, it leaves the
 *                                   queue, the queue is served, and a publish names it; claim-4 then
 *                                   answers it {-7, message} and its call ends (LockError 'deadlock')
 *   settle()    lua/includes/state.lua  purgeExpiredHolders + serveQueue (fits, claim lease, publish)
 *   Server      src/engine/wait-room.ts  claims for the waiters a publish named, and on its timer for
 *                                   all of them; Client: a waiter's call (wait-room's settle/cancel)
 *   Walker      src/engine/deadlocks.ts  on any server, at any moment, ends any waiter's wait (at most
 *                                   MAX_ABORTS times in a run); which waits form a cycle is not modelled
 *
 * What it abstracts; it proves nothing about what it leaves out:
 *   - Time. There is no clock: a lease or a queue entry ends by a nondeterministic event (Clock),
 *     allowed whenever the real one could happen. A confirmed lease only ends once its holder no
 *     longer counts on it (the SDKs' deadline ends before Redis's lease: docs/hold.md, "The guarantee").
 *     A claim lease or a queue entry ends when its server is dead, or when a live one stalls past
 *     it (at most MAX_STALLS times in a run: without a bound a stalling server could starve a
 *     waiter forever, which timing rules out in practice). Renewal is not a step: a holder that
 *     counts on its lease keeps it.
 *   - One exclusive lock and NC waiters, each acquiring once (plus re-queueing after its entry
 *     was lost); no shared mode, semaphores, owners (reentrancy), request ids, hold ids or lock
 *     delay. test/model/lua-model.test.ts checks those against the real scripts.
 *   - Each script is one atomic step, as Redis runs it. A publish may be lost (sharded pub/sub
 *     is at most once); the server's timer is then the only wake-up. A reply is not lost, except
 *     that a server's death ends the calls it serves.
 *
 * Checked: mutual exclusion, "a believing client holds a live grant", "every script leaves the
 * queue served" and "an aborted waiter leaves no grant behind" (assertions, any run);
 * no_lost_wakeup and no_orphan_grant (LTL, weak fairness; an aborted call must be answered too).
 * BROKEN_* variants are negative controls that check.sh requires spin to reject.
 */

#define NC 3            /* waiters (holding, occupied, toldOn, waitingOn and the LTL spell out 3) */
#define NS 2            /* servers; waiter i waits on server SRV(i) */
#define SRV(i) ((i) % NS)
#ifndef MAX_STALLS
#define MAX_STALLS 2
#endif
#ifndef MAX_DEATHS
#define MAX_DEATHS 2
#endif
#ifndef MAX_ABORTS
#define MAX_ABORTS 2
#endif

mtype = { NONE, CLAIMED, HELD, DEAD, QUEUED, SERVED, WAITING, HOLDING, DONE, GRANTED, GONE, ABORTED };

/* Redis: one grant per waiter's token (holders ZSET + g: record), waiter records, the queue. */
mtype grant[NC] = NONE; /* NONE, CLAIMED (served, claim lease), HELD (full lease), DEAD (lease over, not purged yet) */
mtype wrec[NC] = NONE;  /* w:<waiter>: NONE, QUEUED, SERVED, ABORTED (g 3: ended by deadlock detection) */
bool entryOver[NC];    /* the queue entry's lease has run out (e <= now) */
byte queue[NC];        /* queue ZSET in arrival order */
byte qlen;

/* Servers and clients. */
bool alive[NS];
bool told[NC];         /* a publish named this waiter and its server has not acted on it */
mtype answer[NC] = NONE; /* claim's answer on its way to the waiting call: NONE, GRANTED, GONE, ABORTED */
mtype client[NC] = NONE; /* NONE (not started), WAITING, HOLDING, DONE, ABORTED (its call ended by a deadlock abort) */
bool patient[NC];      /* waits with no deadline */
byte stalls = MAX_STALLS;
byte deaths = MAX_DEATHS;
byte aborts = MAX_ABORTS;

#define live(i)       (grant[i] == CLAIMED || grant[i] == HELD)
#define believes(i)   (client[i] == HOLDING || (client[i] == WAITING && answer[i] == GRANTED))
#define holding       ((client[0] == HOLDING) + (client[1] == HOLDING) + (client[2] == HOLDING))
#define occupied      ((grant[0] != NONE) + (grant[1] != NONE) + (grant[2] != NONE))
#ifdef BROKEN_NO_FIT
#define FITS          true          /* serves and grants without looking at the holders */
#else
#define FITS          (occupied == 0)   /* exclusive: fits() after purgeExpiredHolders */
#endif
#define mine(s, i)    (SRV(i) == s && client[i] == WAITING && answer[i] == NONE)   /* in s's wait line */
#define toldOn(s)     ((told[0] && mine(s, 0)) || (told[1] && mine(s, 1)) || (told[2] && mine(s, 2)))
#define waitingOn(s)  (mine(s, 0) || mine(s, 1) || mine(s, 2))
#define ended(i)      (client[i] == DONE || client[i] == ABORTED)
#define liveQueued(i) (wrec[i] == QUEUED && !entryOver[i])
/* What a script leaves behind: no live queued waiter while no live grant (settle would serve it
 * now). Without it a waiter that fits waits for its server's timer (a second) instead of a publish. */
#define SETTLED assert(live(0) || live(1) || live(2) || !(liveQueued(0) || liveQueued(1) || liveQueued(2)))

/* ---- the scripts (lua/) ------------------------------------------------------------------ */

inline dropFromQueue(w) {
  k = 0;
  do
  :: k < qlen && queue[k] != w -> k++
  :: else -> break
  od;
  if
  :: k < qlen ->
     do
     :: k + 1 < qlen -> queue[k] = queue[k + 1]; k++
     :: else -> break
     od;
     qlen--;
     queue[qlen] = 0
  :: else -> skip
  fi;
  k = 0
}

inline purgeExpiredHolders() {
  j = 0;
  do
  :: j < NC -> if :: grant[j] == DEAD -> grant[j] = NONE :: else -> skip fi; j++
  :: else -> break
  od;
  j = 0
}

#ifdef BROKEN_HANDOFF_CLAIM_LEASE
#define HANDOFF_GRANT CLAIMED   /* a handed-off waiter is told before its lease is the full one */
#else
#define HANDOFF_GRANT HELD
#endif

/* serveQueue: dead entries at the head drop out; the head is granted while it fits: a waiter of
 * server hs (the releasing one; NS for none) with its full lease, answered from the script's reply;
 * anyone else with a claim lease, named by the publish. */
inline serveQueue(hs) {
  do
  :: qlen == 0 -> break
  :: qlen > 0 && (wrec[queue[0]] != QUEUED || entryOver[queue[0]]) ->
     h = queue[0]; wrec[h] = NONE; entryOver[h] = false; dropFromQueue(h)
  :: qlen > 0 && wrec[queue[0]] == QUEUED && !entryOver[queue[0]] ->
     h = queue[0];
     if
     :: FITS && SRV(h) == hs -> grant[h] = HANDOFF_GRANT; wrec[h] = NONE; dropFromQueue(h); answer[h] = GRANTED
     :: FITS && SRV(h) != hs -> grant[h] = CLAIMED; wrec[h] = SERVED; dropFromQueue(h); told[h] = true
     :: else -> break
     fi
  od;
  h = 0
}

inline settleFor(hs) {
  purgeExpiredHolders();
  serveQueue(hs)
}

inline settle() {
  settleFor(NS)
}

/* acquire-4 with waiter id i (and i's token): no barging past a queue. */
inline acquire(i) {
  settle();
  if
  :: qlen == 0 && FITS -> grant[i] = HELD; client[i] = HOLDING
  :: else -> queue[qlen] = i; qlen++; wrec[i] = QUEUED; entryOver[i] = false; client[i] = WAITING
  fi;
  SETTLED
}

/* release-4 with i's token, sent by i's server (which its waiters get the lock from directly). */
inline release(i) {
  if
  :: live(i) -> grant[i] = NONE
  :: else -> skip
  fi;
#ifndef BROKEN_RELEASE_NO_SERVE
  settleFor(SRV(i));
#endif
  SETTLED
}

/* dequeue-4: the call of waiter i ended. */
inline dequeue(i) {
  if
  :: wrec[i] == SERVED && live(i) -> grant[i] = NONE
  :: else -> skip
  fi;
  wrec[i] = NONE;
  entryOver[i] = false;
  dropFromQueue(i);
  settle();
  SETTLED
}

#ifdef BROKEN_ABORT_SERVED
#define ABORTABLE(i) (liveQueued(i) || wrec[i] == SERVED)   /* also ends a wait the queue already served */
#else
#define ABORTABLE(i) liveQueued(i)                          /* it still waits: live entry, not served, queued */
#endif

/* abort-wait-4 for waiter i, run by a deadlock walker on any server. */
inline abortWait(i) {
  if
  :: ABORTABLE(i) ->
     wrec[i] = ABORTED;
     dropFromQueue(i);
     told[i] = true;                                     /* 'g <waiter id>': its server claims for it */
#ifndef BROKEN_ABORT_NO_SETTLE
     settle();
#endif
     SETTLED
  :: else -> skip                                        /* no longer waiting: returns 0 */
  fi
}

/* claim-4 for one waiter in server s's line. */
inline claimOne(i) {
  told[i] = false;
  if
  :: wrec[i] == QUEUED -> entryOver[i] = false          /* refreshed (even if it had run out) */
  :: wrec[i] == SERVED ->
     wrec[i] = NONE;
     if
     :: grant[i] == CLAIMED -> grant[i] = HELD; answer[i] = GRANTED
     :: else -> answer[i] = GONE                         /* its claim lease ran out */
     fi
  :: wrec[i] == NONE -> answer[i] = GONE                 /* its entry ran out and dropped */
#ifdef BROKEN_ABORT_UNANSWERED
  :: wrec[i] == ABORTED -> skip                          /* claim-4 without its {-7, message} answer */
#else
  :: wrec[i] == ABORTED -> wrec[i] = NONE; answer[i] = ABORTED   /* {-7, message} */
#endif
  fi
}

/* claim-4 from server s: for the waiters a publish named (onlyTold), or for all of them (timer). */
inline claim(s, onlyTold) {
#ifndef BROKEN_CLAIM_NO_SETTLE
  settle();
#endif
  m = 0;
  do
  :: m < NC ->
     if
     :: mine(s, m) && (!onlyTold || told[m]) -> claimOne(m)
     :: else -> skip
     fi;
     m++
  :: else -> break
  od;
  m = 0;
  SETTLED
}

/* A lost message: server s never hears that its waiters were served. */
inline forget(s) {
  m = 0;
  do
  :: m < NC -> if :: SRV(m) == s -> told[m] = false :: else -> skip fi; m++
  :: else -> break
  od;
  m = 0
}

/* ---- processes ---------------------------------------------------------------------------- */

/* A server's wait room: acts on publishes, runs its timer, or dies (its calls end with it). */
proctype Server(byte s) {
  byte h, j, k, m;
end:
  do
  :: d_step { alive[s] && toldOn(s); claim(s, true) }
  :: d_step { alive[s] && toldOn(s); forget(s) }                                          /* the message is lost */
  :: d_step { alive[s] && waitingOn(s); claim(s, false) }                                   /* its timer */
  :: d_step { alive[s] && deaths > 0; alive[s] = false; deaths-- }
  od
}

/* One waiter's call: acquire, wait (answer, re-queue, deadline, or its server dies), hold, let go. */
proctype Client(byte i) {
  byte h, j, k, m;
  d_step { acquire(i) };
  do
  :: client[i] == HOLDING -> break
  :: d_step { answer[i] == GRANTED; answer[i] = NONE; client[i] = HOLDING }; break
  :: d_step { answer[i] == GRANTED; answer[i] = NONE; client[i] = DONE }; goto done   /* came after the SDK's deadline: not used, left to run out */
  :: d_step { answer[i] == GONE; answer[i] = NONE; acquire(i) }                         /* queue again, at the back */
  :: d_step { answer[i] == ABORTED; answer[i] = NONE; client[i] = ABORTED;               /* LockError('deadlock'): holds nothing, */
              assert(!live(i) && wrec[i] == NONE) }; goto done                               /* and left no grant or record behind */
  :: !patient[i] && client[i] == WAITING ->                                              /* deadline: leave the line, dequeue */
     d_step { client[i] = DONE; dequeue(i) };
     if
     :: answer[i] == GRANTED && alive[SRV(i)] -> d_step { answer[i] = NONE; release(i) }  /* a grant that raced the cancel */
     :: else -> answer[i] = NONE
     fi;
     goto done
  :: d_step { !alive[SRV(i)] && client[i] == WAITING; client[i] = DONE; answer[i] = NONE }; goto done
  od;
  /* the critical section */
  assert(holding <= 1);
  assert(grant[i] == HELD);
  if
  :: alive[SRV(i)] -> d_step { client[i] = DONE; release(i) }
  :: client[i] = DONE        /* lost: crashed, frozen or cut off; its SDK deadline passes, the lease runs out */
  fi;
done:
  skip
}

#define EXPIRES(i) \
  :: d_step { grant[i] == HELD && HELD_MAY_END(i); grant[i] = DEAD } \
  CLAIM_LEASE_ENDS(i) \
  :: d_step { wrec[i] == QUEUED && !entryOver[i] && (!alive[SRV(i)] || stalls > 0); \
              if :: alive[SRV(i)] -> stalls-- :: else -> skip fi; entryOver[i] = true }

#ifdef BROKEN_EXPIRY_BEFORE_DEADLINE
#define HELD_MAY_END(i) true         /* Redis's lease ends while its holder still counts on it */
#else
#define HELD_MAY_END(i) (!believes(i))
#endif
#ifdef BROKEN_NO_CLAIM_LEASE
#define CLAIM_LEASE_ENDS(i)          /* a served grant lives until its waiter's server confirms it */
#else
#define CLAIM_LEASE_ENDS(i) \
  :: d_step { grant[i] == CLAIMED && (!alive[SRV(i)] || stalls > 0); \
              if :: alive[SRV(i)] -> stalls-- :: else -> skip fi; grant[i] = DEAD }
#endif

/* Time: leases and entries run out. */
active proctype Clock() {
end:
  do
  EXPIRES(0)
  EXPIRES(1)
  EXPIRES(2)
  od
}

/* Deadlock walkers, on any server: end any waiter's wait, at any moment, MAX_ABORTS times in all
 * (a call for a waiter that no longer waits changes nothing, so it is left out). */
active proctype Walker() {
  byte h, j, k;
end:
  do
  :: d_step { aborts > 0 && ABORTABLE(0); aborts--; abortWait(0) }
  :: d_step { aborts > 0 && ABORTABLE(1); aborts--; abortWait(1) }
  :: d_step { aborts > 0 && ABORTABLE(2); aborts--; abortWait(2) }
  :: aborts > 0 -> aborts = 0    /* no more cycles: weak fairness must not force an abort on anyone */
  od
}

init {
  atomic {
    alive[0] = true;
    alive[1] = true;
    if :: patient[0] = true :: skip fi;
    if :: patient[1] = true :: skip fi;
    if :: patient[2] = true :: skip fi;
    run Server(0);
    run Server(1);
    run Client(0);
    run Client(1);
    run Client(2)
  }
}

/* A waiting call on a live server stops waiting: it is answered, or gives up at its deadline
 * (its entry leaves with it); a lost entry is noticed and re-queued. Nobody waits forever for a
 * wake-up that never comes. */
#define waiting(i)  (client[i] == WAITING && alive[SRV(i)])
ltl no_lost_wakeup { [] ((waiting(0) -> <> !waiting(0)) && (waiting(1) -> <> !waiting(1)) && (waiting(2) -> <> !waiting(2))) }

/* A grant nobody counts on whose waiter is gone (server dead, call ended) is dropped or runs out. */
#define orphan(i)   (live(i) && !believes(i) && (ended(i) || !alive[SRV(i)]))
ltl no_orphan_grant { [] ((orphan(0) -> <> !orphan(0)) && (orphan(1) -> <> !orphan(1)) && (orphan(2) -> <> !orphan(2))) }
