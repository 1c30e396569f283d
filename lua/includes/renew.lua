--[[
  Renews one lease: what renew-3 does for its one lease and renew-batch-3 for each of many, so
  both follow the same rules. Part of the library, after includes/state; the caller sets
  holdersKey, queueKey and dataKey to the lease's lock first (includes/begin set now).

  Renews a live grant's lease to now + ttl. It never shortens a lease: a client (or another
  hold of the same grant) may be counting on the current expiry. ttl 0 keeps the grant's lease
  length; holdId is a Hold stream's own hold ('' otherwise), renewed only while the grant has it.

  Returns two values (not a table, so a batch builds none per lease), and a third when renewed:
    1, leaseLeft, fence   renewed: the lease now ends leaseLeft ms from now (at least ttl); fence is
                    the grant's fencing token (renew-3 returns it when asked; a batch drops it)
    -1, why         nothing renewed: why is 1 when someone else holds the lock now, 2 when the
                    grant lives but this hold was given back (Release), 0 when it expired or was released
  Redis calls: ZSCORE, HGET, ZADD (left out when the lease already runs that long), PTTL (and,
  about once a RETAIN_MS, three PEXPIRE: keepKeysUntil).
]]
local function renewLease(token, ttl, holdId)
  local grant, current = liveGrant(token)
  if not grant then
    -- Its own entry counts among the live ones only while its (abandoned) lease has not run out.
    local own = leaseExpiry(token)
    local othersLive = redis.call('ZCOUNT', holdersKey, '(' .. now, '+inf') - ((own and own > now) and 1 or 0)
    if othersLive > 0 then return -1, 1 end
    return -1, 0
  end
  if holdId ~= '' and not findHold(grant, holdId) then return -1, 2 end
  if ttl == 0 then ttl = grant.t end
  -- liveGrant read the current expiry already: no second ZSCORE.
  local expiry = math.max(now + ttl, current)
  if expiry > current then redis.call('ZADD', holdersKey, expiry, token) end
  keepKeysUntil(expiry)
  return 1, expiry - now, grant.f
end
