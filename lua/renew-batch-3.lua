--[[
  Renews many leases in one call (the watchdog's renewals of one tick), each exactly as renew-3
  would renew it alone (includes/renew), in order, at one Redis time. One function call and one
  TIME for the batch instead of one per lease: a function call's fixed cost is several µs.
  On a Redis Cluster a script may touch one slot only, so there the server batches the leases of
  one slot; on one Redis (or Sentinel's master) any locks go together.

  KEYS[1..]   3 per lease, in ARGV's order: its holders, queue and data keys (see includes/state)
  ARGV[1..]   3 per lease: its token, ttl ms (0 keeps the grant's lease length), hold id ('' for none)

  Returns a flat list, two entries per lease, in order: what renew-3 returns for it
    1, leaseLeft     renewed: the lease now ends leaseLeft ms from now
    -1, why          nothing renewed (why as in renew-3)
]]
--- @include "includes/begin"
if #KEYS ~= #ARGV or #ARGV % 3 ~= 0 then
  return redis.error_reply('ERR renew-batch-3 takes 3 KEYS and 3 ARGV per lease')
end
local replies = {}
local n = 0
for i = 1, #ARGV, 3 do
  holdersKey, queueKey, dataKey = KEYS[i], KEYS[i + 1], KEYS[i + 2]
  replies[n + 1], replies[n + 2] = renewLease(ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2])
  n = n + 2
end
return replies
