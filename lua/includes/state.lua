--[[
  Shared helpers for every lock function, made once per library load (includes/library).

  One data model serves every lock kind (exclusive, shared, semaphore) and the wait queue,
  all under one hash tag so each script touches one slot:

    holders  ZSET  grant token -> lease expiry in ms (Redis clock)
    queue    ZSET  waiter id   -> arrival number
    data     HASH  fence        last fencing token granted
                   limit        1 (plain or read-write) or N (semaphore); absent while idle
                   seq          arrival counter of the queue
                   g:<token>    grant   {o owner, f fence, x exclusive holds, s shared holds,
                                         t lease ms, r request ids, a abandoned (closed until its expiry),
                                         h Hold streams' holds (mode digit .. hold id, oldest first),
                                         k keep-closed-until ms (leases of vanished Hold streams),
                                         km the strongest mode a vanished hold had,
                                         v the value it publishes to watchers, absent for none,
                                         w who it is for deadlock detection without an owner, absent for none}
                   o:<owner>    token of the owner's grant (reentrancy)
                   r:<request>  request {k token, o owner, m mode, l limit, t lease ms} (idempotency)
                   w:<waiter>   waiter  {k token, o owner, m mode, l limit, t lease ms, r request id,
                                         h hold id, e entry expiry, wl entry lease ms, q queued at (ms),
                                         g 0 queued / 1 granted / 2 refused / 3 aborted (a deadlock),
                                         d with g 3: the message its call is answered with}

  A request (what acquire-4 was asked, and what a waiter record keeps) is {o, m, l, t, r, h, v, w}:
  owner, mode, limit, lease ms, request id ('' for none), hold id ('' unless a Hold stream asks),
  the value a new grant publishes (absent for none), and the identity deadlock detection knows an
  ownerless caller by (a session's; absent for none).

  includes/library declares holdersKey, queueKey, dataKey, channel (may be nil), now and nowUs,
  and each lock function sets them for its call (includes/begin).
  Numbers that can exceed 14 digits (fencing tokens) are kept as strings: cjson keeps 14.
]]

local EXCLUSIVE, SHARED = 1, 2
-- Data outlives the last lease by this much so Inspect and CheckFencingToken still see the last fence.
local RETAIN_MS = 60000

local function loadRecord(field)
  local raw = redis.call('HGET', dataKey, field)
  if raw then return cjson.decode(raw) end
  return nil
end

local function saveRecord(field, record)
  redis.call('HSET', dataKey, field, cjson.encode(record))
end

-- What a request id was first used for, or nil; a record older holdfast wrote (a bare token)
-- reads as a request with no owner or parameters, which no replay matches.
local function loadRequest(requestId)
  local raw = redis.call('HGET', dataKey, 'r:' .. requestId)
  if not raw then return nil end
  local ok, request = pcall(cjson.decode, raw)
  if ok and type(request) == 'table' then return request end
  return { k = raw }
end

local function holdCount(grant)
  return grant.x + grant.s
end

-- A vanished exclusive hold keeps the grant exclusive while its lease may run: its client
-- still believes it holds the lock alone, even with no holds (or only shared ones) left.
local function modeOf(grant)
  if grant.x > 0 or (grant.km == EXCLUSIVE and (grant.k or 0) > now) then return EXCLUSIVE end
  return SHARED
end

local function leaseExpiry(token)
  return tonumber(redis.call('ZSCORE', holdersKey, token))
end

-- A grant that can still be used by its holder: present, unexpired, not abandoned to a lock-delay.
local function liveGrant(token)
  local expiry = leaseExpiry(token)
  if not expiry or expiry <= now then return nil end
  local grant = loadRecord('g:' .. token)
  if not grant or grant.a == 1 then return nil end
  return grant, expiry
end

-- `grant` is the record when the caller has it loaded already (nil: read it here).
local function forgetGrant(token, grant)
  grant = grant or loadRecord('g:' .. token)
  if grant then
    if grant.o ~= '' and redis.call('HGET', dataKey, 'o:' .. grant.o) == token then
      redis.call('HDEL', dataKey, 'o:' .. grant.o)
    end
    for _, requestId in ipairs(grant.r) do
      -- A retry may have tied the id to a newer grant meanwhile (this one was no longer live).
      local request = loadRequest(requestId)
      if request and request.k == token then redis.call('HDEL', dataKey, 'r:' .. requestId) end
    end
    redis.call('HDEL', dataKey, 'g:' .. token)
  end
  redis.call('ZREM', holdersKey, token)
end

-- Fencing tokens: max(last + 1, Redis TIME in microseconds). Strictly increasing while the
-- data key lives, and still increasing after it expired, because the clock has moved on since.
-- The caller stores it (createGrant writes it with the grant, in one HSET).
local function nextFence()
  local last = tonumber(redis.call('HGET', dataKey, 'fence') or '0')
  return string.format('%.0f', math.max(last + 1, nowUs))
end

-- Adds one hold of `request` to a grant: counted by mode, named when a Hold stream keeps it,
-- and remembered under its request id together with what was asked (a replay must ask the same).
local function addHold(token, grant, request)
  if request.m == SHARED then grant.s = grant.s + 1 else grant.x = grant.x + 1 end
  if request.h ~= '' then table.insert(grant.h, request.m .. request.h) end
  if request.r ~= '' then
    table.insert(grant.r, request.r)
    saveRecord('r:' .. request.r, { k = token, o = request.o, m = request.m, l = request.l, t = request.t })
  end
end

local function createGrant(token, request, expiry)
  local grant = { o = request.o, f = nextFence(), x = 0, s = 0, t = request.t, r = {}, a = 0, h = {}, k = 0, v = request.v, w = request.w }
  addHold(token, grant, request)
  if request.o ~= '' then redis.call('HSET', dataKey, 'o:' .. request.o, token) end
  redis.call('HSET', dataKey, 'fence', grant.f, 'g:' .. token, cjson.encode(grant), 'limit', request.l)
  redis.call('ZADD', holdersKey, expiry, token)
  return grant
end

-- Adds one hold to the owner's grant. Shared -> exclusive would deadlock against other readers.
local function reenter(token, grant, request, expiry)
  if request.m == EXCLUSIVE and grant.x == 0 then return false end
  grant.h = grant.h or {}
  addHold(token, grant, request)
  saveRecord('g:' .. token, grant)
  if expiry > (leaseExpiry(token) or 0) then redis.call('ZADD', holdersKey, expiry, token) end
  return true
end

-- The position and mode of a Hold stream's hold in its grant, or nil when it was given back.
local function findHold(grant, holdId)
  for i, entry in ipairs(grant.h or {}) do
    if string.sub(entry, 2) == holdId then return i, tonumber(string.sub(entry, 1, 1)) end
  end
  return nil
end

-- Holds taken by Acquire (unnamed), of one mode.
local function unnamedHolds(grant, mode)
  local count = mode == SHARED and grant.s or grant.x
  for _, entry in ipairs(grant.h or {}) do
    if tonumber(string.sub(entry, 1, 1)) == mode then count = count - 1 end
  end
  return count
end

-- Keeps a grant with no holds left closed to everyone until `untilMs`, when its expiry frees it.
-- Servers with waiters are told when to look again, since an expiry publishes nothing.
local function abandon(token, grant, untilMs)
  grant.a = 1
  saveRecord('g:' .. token, grant)
  redis.call('ZADD', holdersKey, untilMs, token)
  if channel and redis.call('ZCARD', queueKey) > 0 then redis.call('SPUBLISH', channel, 'd ' .. (untilMs - now)) end
end

-- Gives back one hold: the Hold stream's hold `holdId`, or (holdId '') one taken by Acquire, of
-- `mode` if it has one, else exclusive first, so "write, read, release" leaves a read hold (downgrade).
-- The caller makes sure that hold exists. `vanishedUntil` (nil for a holder's own release) is
-- when the lease of a holder that vanished may end. The last hold frees the grant, unless such a
-- lease may still run (k): then it stays closed, in that holder's mode, until then.
-- Returns the holds left.
local function dropHold(token, grant, holdId, mode, vanishedUntil)
  local dropMode = mode
  if holdId ~= '' then
    local index
    index, dropMode = findHold(grant, holdId)
    table.remove(grant.h, index)
  elseif not (mode == SHARED and unnamedHolds(grant, SHARED) > 0) then
    dropMode = unnamedHolds(grant, EXCLUSIVE) > 0 and EXCLUSIVE or SHARED
  end
  if dropMode == SHARED then grant.s = grant.s - 1 else grant.x = grant.x - 1 end
  if vanishedUntil then
    grant.k = math.max(grant.k or 0, vanishedUntil)
    if dropMode == EXCLUSIVE or grant.km ~= EXCLUSIVE then grant.km = dropMode end
  end
  local left = holdCount(grant)
  if left > 0 then
    saveRecord('g:' .. token, grant)
  elseif (grant.k or 0) > now then
    abandon(token, grant, grant.k)
  else
    forgetGrant(token, grant)
  end
  return left
end

-- Drops the holders whose lease has run out. Returns the first (earliest-ending) holder left, or
-- false: most calls find nothing expired and get by with that one read.
local function purgeExpiredHolders()
  local first = redis.call('ZRANGE', holdersKey, 0, 0, 'WITHSCORES')
  if first[1] and tonumber(first[2]) <= now then
    for _, token in ipairs(redis.call('ZRANGEBYSCORE', holdersKey, '-inf', now)) do forgetGrant(token) end
    first = redis.call('ZRANGE', holdersKey, 0, 0)
  end
  return first[1] or false
end

-- Whether a new grant of `mode` fits beside the current holders.
-- Under limit 1 an exclusive grant is always alone, so the first holder tells the mode of all.
-- `first` is that holder when the caller knows it (false: none), nil to look it up.
local function fits(mode, limit, first)
  if limit > 1 then return redis.call('ZCARD', holdersKey) < limit end
  if first == nil then first = redis.call('ZRANGE', holdersKey, 0, 0)[1] end
  if not first then return true end
  if mode == EXCLUSIVE then return false end
  local grant = loadRecord('g:' .. first)
  return grant ~= nil and modeOf(grant) == SHARED
end

-- The latest lease serveQueue() gave in this script (keepServed() keeps the keys that long).
local servedUntil = 0
-- Set by release-4: waiters whose id starts with this ('<server id>.') are served by the server
-- running the script, which answers them from its reply: such a waiter gets its full lease at
-- once, no waiter record and no publish, and goes into handedOff as {waiter id, token, fence,
-- lease ms, hold count, hold id}. nil: every waiter takes the claim path.
local handOffPrefix = nil
local handedOff = {}

local function waiterAlive(waiter)
  return waiter ~= nil and waiter.e > now
end

local function dropWaiter(waiterId)
  redis.call('ZREM', queueKey, waiterId)
  redis.call('HDEL', dataKey, 'w:' .. waiterId)
end

-- Serves the queue head by head while each fits: the leading run of shared waiters goes
-- together, a semaphore fills up, and an exclusive head blocks everyone behind it.
-- Each served waiter gets its grant with a short claim lease (its entry lease); the waiter's
-- server confirms the full lease when it answers, so a grant made for a dead server frees itself.
-- One publish tells every server which of its waiters to answer.
-- lua/model/queue.pml models this with claim, dequeue, expiry and server death (spin: lua/model/check.sh).
-- Returns the number served and whether the queue is empty now.
local function serveQueue()
  local ready = {}
  local empty = false
  while true do
    local head = redis.call('ZRANGE', queueKey, 0, 0)[1]
    if not head then
      empty = true
      break
    end
    local waiter = loadRecord('w:' .. head)
    if not waiterAlive(waiter) then
      dropWaiter(head)
    else
      local handOff = handOffPrefix ~= nil and string.sub(head, 1, #handOffPrefix) == handOffPrefix
      local expiry = now + (handOff and waiter.t or math.min(waiter.t, waiter.wl))
      local held = waiter.o ~= '' and redis.call('HGET', dataKey, 'o:' .. waiter.o)
      local grant = held and liveGrant(held)
      waiter.h = waiter.h or ''
      if grant then
        if reenter(held, grant, waiter, expiry) then
          waiter.g, waiter.k = 1, held
          servedUntil = math.max(servedUntil, expiry)
        else
          waiter.g = 2
        end
      elseif fits(waiter.m, waiter.l) then
        grant = createGrant(waiter.k, waiter, expiry)
        waiter.g = 1
        servedUntil = math.max(servedUntil, expiry)
      else
        break
      end
      redis.call('ZREM', queueKey, head)
      if handOff and waiter.g == 1 then
        redis.call('HDEL', dataKey, 'w:' .. head)
        table.insert(handedOff, { head, waiter.k, grant.f, waiter.t, holdCount(grant), waiter.h })
      else
        saveRecord('w:' .. head, waiter)
        table.insert(ready, head)
      end
    end
  end
  if #ready > 0 and channel then
    redis.call('SPUBLISH', channel, 'g ' .. table.concat(ready, ' '))
  end
  return #ready + #handedOff, empty
end

-- Milliseconds until the earliest lease ends (when a waiter should look again), or -1.
local function msToNextExpiry()
  local first = redis.call('ZRANGE', holdersKey, 0, 0, 'WITHSCORES')
  if first[2] then return math.max(0, tonumber(first[2]) - now) end
  return -1
end

-- Every key expires: data lives as long as the longest lease (or a waiting queue) plus RETAIN_MS.
local function keepKeys()
  local last = redis.call('ZRANGE', holdersKey, -1, -1, 'WITHSCORES')
  local queued = redis.call('ZCARD', queueKey) > 0
  if not last[2] and not queued then redis.call('HDEL', dataKey, 'limit') end
  local lastExpiry = now
  if last[2] then lastExpiry = math.max(lastExpiry, tonumber(last[2])) end
  if queued then lastExpiry = math.max(lastExpiry, now + RETAIN_MS) end
  local ttl = lastExpiry - now + RETAIN_MS
  redis.call('PEXPIRE', holdersKey, ttl)
  redis.call('PEXPIRE', queueKey, ttl)
  redis.call('PEXPIRE', dataKey, ttl)
end

-- For a script that only pushed one lease (or a queue's retention) out to `expiry` (a grant, a
-- renewal, a queued waiter): extending the TTLs with RETAIN_MS of slack lets most calls get by
-- with one PTTL instead of keepKeys()'s six commands. The three keys always get the same TTL, so
-- the data key's tells all three; `holdersNew` / `queueNew`: the script may have made that key
-- anew (a ZADD on an empty set), without one.
local function keepKeysUntil(expiry, holdersNew, queueNew)
  local needed = expiry - now + RETAIN_MS
  local dataTtl = redis.call('PTTL', dataKey)
  if dataTtl < needed then
    for _, key in ipairs({ holdersKey, queueKey, dataKey }) do
      redis.call('PEXPIRE', key, needed + RETAIN_MS)
    end
    return
  end
  if holdersNew then redis.call('PEXPIRE', holdersKey, dataTtl) end
  if queueNew then redis.call('PEXPIRE', queueKey, dataTtl) end
end

-- What settle() saw, while nothing has changed since: the first holder (false: none) and
-- whether the queue is empty; both nil when it served a waiter (then they must be read again).
local settledFirst, settledEmpty = nil, nil

-- Brings the lock up to date: expired holders out, then whoever waits and now fits in.
-- Returns true when it served a waiter: a grant may then have made a key anew (ZADD on a holders
-- set the purge emptied), so the script must end with keepServed() (or keepKeys()) even when it refuses.
local function settle()
  local first = purgeExpiredHolders()
  local served, empty = serveQueue()
  if served > 0 then
    settledFirst, settledEmpty = nil, nil
  else
    settledFirst, settledEmpty = first, empty
  end
  return served > 0
end

-- The TTLs after settle() served waiters: their grants last until servedUntil.
local function keepServed()
  keepKeysUntil(servedUntil, true)
end

-- The end of a script that extended no lease and made no key (a release that served nobody):
-- the TTLs already outlive every lease; only an idle lock's limit goes.
local function keepIdle()
  if settledFirst == false and settledEmpty then redis.call('HDEL', dataKey, 'limit') end
end

-- The lease left, not the lease length: a client counts it from when it sent its request, and a
-- re-entered or replayed grant may end sooner than a fresh one would.
local function grantReply(token, grant)
  return { 1, token, grant.f, leaseExpiry(token) - now, holdCount(grant) }
end
