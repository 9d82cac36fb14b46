-- Argo CD health of a ClusterStack (argocd-cm key
-- resource.customizations.health.clusterstack.x-k8s.io_ClusterStack). Argo CD runs this with the
-- live object in `obj` and reads hs.status and hs.message. Written for Lua 5.1 (Argo CD embeds
-- gopher-lua): no integer division, bit operators or goto.
--   no status yet, or status for an older generation  -> Progressing
--   Ready True                                         -> Healthy
--   Ready False, reason ending in Invalid, Failed,
--     NotFound or Refused (a person has to fix it)     -> Degraded
--   anything else (waiting for releases, providers)   -> Progressing
local hs = {}

local function needsUserFix(reason)
  if type(reason) ~= "string" then
    return false
  end
  for _, suffix in ipairs({ "Invalid", "Failed", "NotFound", "Refused" }) do
    if string.len(reason) >= string.len(suffix) and string.sub(reason, -string.len(suffix)) == suffix then
      return true
    end
  end
  return false
end

-- "<reason>: <message>", or whichever of the two is set, or the fallback.
local function describe(condition, fallback)
  local reason = condition.reason
  local text = condition.message
  if type(reason) ~= "string" or reason == "" then
    reason = nil
  end
  if type(text) ~= "string" or text == "" then
    return reason or fallback
  end
  if reason ~= nil then
    return reason .. ": " .. text
  end
  return text
end

local generation = nil
if obj.metadata ~= nil then
  generation = obj.metadata.generation
end

local status = obj.status
if status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to report status"
  return hs
end
if generation ~= nil and status.observedGeneration ~= nil and status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. tostring(generation)
  return hs
end

local ready = nil
if status.conditions ~= nil then
  for _, condition in ipairs(status.conditions) do
    if condition.type == "Ready" then
      ready = condition
    end
  end
end

if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the Ready condition"
  return hs
end
if generation ~= nil and ready.observedGeneration ~= nil and ready.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the Ready condition to reflect generation " .. tostring(generation)
  return hs
end
if ready.status == "True" then
  hs.status = "Healthy"
  hs.message = describe(ready, "Ready")
  return hs
end
if ready.status == "False" and needsUserFix(ready.reason) then
  hs.status = "Degraded"
  hs.message = describe(ready, "Not ready")
  return hs
end
hs.status = "Progressing"
hs.message = describe(ready, "Not ready yet")
return hs
