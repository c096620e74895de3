-- wrk script of the load benchmark (bench/load/run).
--
--   wrk -t N -c N -s requests.lua URL -- DIR
--
-- Thread i (numbered in setup) sends the pre-signed bodies of DIR/t<ii>.req
-- (bench/load/make-requests.py) in file order, wrapping around at the end
-- (the file holds whole open+close pairs, so wrapping keeps the order; the
-- runner sizes the files so that it does not happen, and reports it if it
-- does). Run one connection per thread (-t N -c N): a connection waits for
-- each answer before it sends the next request, so open-before-close holds
-- per address, and no other thread uses the thread's addresses.
--
-- done() prints one line `BENCH_RESULT {json}` with wrk's summary (latency
-- in microseconds, errors by kind) and, per thread, how many requests it
-- issued and how many bodies it had, for the runner's trailing closes and
-- its store check.

local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  local path = string.format("%s/t%02d.req", args[1], id)
  local headers = { ["Content-Type"] = "application/json" }
  bodies = {}
  for line in io.lines(path) do
    bodies[#bodies + 1] = wrk.format("POST", "/api/v1/display", headers, line)
  end
  loaded = #bodies
  issued = 0
  if loaded == 0 then
    error("no requests in " .. path)
  end
end

function request()
  issued = issued + 1
  return bodies[(issued - 1) % loaded + 1]
end

function done(summary, latency, requests)
  local issued, loaded = {}, {}
  for i, thread in ipairs(threads) do
    issued[i] = tostring(thread:get("issued"))
    loaded[i] = tostring(thread:get("loaded"))
  end
  local e = summary.errors
  io.write(string.format(
    'BENCH_RESULT {"duration_us":%d,"requests":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f},' ..
    '"issued":[%s],"loaded":[%s]}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean,
    table.concat(issued, ","), table.concat(loaded, ",")))
end
