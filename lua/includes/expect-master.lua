--[[
  Put before a granting script when the server asks for it (a Redis Cluster with the failover
  quarantine). On any node but the master the server checked for the slot (a promoted replica
  reached through a stale slot map, still quarantined) nothing is granted. Removes its ARGV, so
  the script below sees its own arguments.

  ARGV[#ARGV] run_id of the master the server checked for this slot (appended by the server)
]]
local expectedMaster = table.remove(ARGV)
if expectedMaster ~= string.match(redis.call('INFO', 'server'), 'run_id:(%w+)') then
  return redis.error_reply('MASTERCHANGED this node is not the Redis master this server checked for the slot; try again')
end
