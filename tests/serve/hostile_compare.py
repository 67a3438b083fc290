#!/usr/bin/env python3
# Hostile clients against a running `vsynth serve` (serve_fixture or the vsynth binary), for
# comparing servers side by side (figures, not a pass/fail test): 40 slowloris connections while
# /health and a completion are asked for, a 20 MiB chunked body against the 1 MiB limit, a body
# nested 100,000 deep, 1e400, a GET on a POST route. Prints JSON.
#
#   python3 tests/serve/hostile_compare.py build/tests/serve/serve_fixture PIPELINE.yaml
import json, socket, subprocess, sys, threading, time, re, http.client

def start(binary, yaml):
    p = subprocess.Popen([binary, yaml], stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    port = int(re.search(r"127.0.0.1:(\d+)", line).group(1))
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    return p, port

def req(port, method, path, body=None, timeout=5):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    t0 = time.time()
    try:
        c.request(method, path, body=body, headers={"Content-Type": "application/json"})
        r = c.getresponse(); data = r.read()
        return r.status, (time.time() - t0) * 1000, data
    except Exception as e:
        return -1, (time.time() - t0) * 1000, str(e).encode()

def slowloris(port, n=40, seconds=6):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port)); s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Pad: "); socks.append(s)
    stop = [False]
    def drip():
        end = time.time() + seconds
        while time.time() < end and not stop[0]:
            for s in socks:
                try: s.sendall(b"a")
                except Exception: pass
            time.sleep(0.5)
    t = threading.Thread(target=drip); t.start()
    time.sleep(1.0)
    health = [req(port, "GET", "/health", timeout=2) for _ in range(10)]
    comp = req(port, "POST", "/v1/completions", json.dumps({"prompt": "a", "max_tokens": 4}), timeout=30)
    stop[0] = True; t.join()
    closed = 0
    for s in socks:
        s.settimeout(12)
        try:
            closed += 1 if s.recv(1) == b"" else 0
        except Exception: pass
        s.close()
    ok = sum(1 for h in health if h[0] == 200 and h[1] < 2000)
    return {"health_ok_within_2s": f"{ok}/10", "health_max_ms": round(max(h[1] for h in health)),
            "completion_status": comp[0], "completion_ms": round(comp[1]), "slow_closed_by_server": f"{closed}/{n}"}

def chunked(port, total_mb=20):
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(20)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"%x\r\n" % 65536 + b" " * 65536 + b"\r\n"
    sent = 0
    t0 = time.time()
    try:
        while sent < total_mb * (1 << 20):
            s.sendall(chunk); sent += 65536
        s.sendall(b"0\r\n\r\n")
    except Exception: pass
    try: head = s.recv(200).split(b"\r\n")[0].decode()
    except Exception as e: head = "error: " + str(e)
    s.close()
    return {"status_line": head, "bytes_sent_before_refusal_MiB": round(sent / (1 << 20), 2), "s": round(time.time() - t0, 2)}

def deep(port):
    body = '{"id": "t", "prefix": "a", "x": ' + "[" * 100000 + "]" * 100000 + "}"
    st, ms, data = req(port, "POST", "/v1/tasks", body, timeout=30)
    alive = req(port, "GET", "/health", timeout=5)[0]
    return {"status": st, "health_after": alive}

binary, yaml = sys.argv[1], sys.argv[2]
out = {}
p, port = start(binary, yaml)
try:
    out["slowloris"] = slowloris(port)
    out["chunked_20MiB_limit_1MiB"] = chunked(port)
    out["deep_100000"] = deep(port)
    out["1e400"] = req(port, "POST", "/v1/completions", '{"prompt": "x", "temperature": 1e400}')[0]
    out["bearer_lowercase_GET_405"] = req(port, "GET", "/v1/completions")[0]
finally:
    p.kill()
print(json.dumps(out, indent=1))
