"""Serving (ms_service_profiler parsed output, FORMATS-SERVING.md §3): TTFT / TPOT, batches against the requests
in flight, KV cache, and the finding each pattern supports."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from opprof_advisor.advice.serving import serving_figures, serving_findings
from opprof_advisor.cli.app import app
from opprof_advisor.readers.serving import read_serving

BASE_US = 1_736_000_000_000_000.0


def _line(cells: list) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(cells)
    return out.getvalue()


def _write(folder: Path, *, clients: int, requests: int, tokens: int, step_ms: float, kv_peak: float,
           swapped: int = 0, bubble_ms: float = 0.1, prefill_every: int = 0, stall_ms: float = 0.0, prompt: int = 100,
           span: str = "modelExec") -> Path:
    """A vLLM-Ascend run: ``clients`` requests in flight at once, each ``tokens`` decode iterations of ``step_ms``;
    every ``prefill_every``-th iteration also runs a prefill and takes ``stall_ms`` more."""
    folder.mkdir(parents=True, exist_ok=True)
    req = ["http_rid,start_datetime,recv_token_size,reply_token_size,execution_time(ms),queue_wait_time(ms),"
           "first_token_latency(ms),cache_hit_rate,start_time(ms)"]
    batch = ["name,res_list,start_datetime,end_datetime,during_time(ms),batch_type,prof_id,batch_size,total_blocks,"
             "used_blocks,free_blocks,blocks_allocated,blocks_freed,kvcache_usage_rate,prefill_batch_size,"
             "decode_batch_size,prefill_scheduled_tokens,decode_scheduled_tokens,total_scheduled_tokens,dp_rank,"
             "start_time(ms),end_time(ms)"]
    forward = ["name,relative_start_time(ms),start_datetime,end_datetime,during_time(ms),bubble_time(ms),batch_size,"
               "batch_type,forward_iter,dp_rank,prof_id,hostname,start_time(ms),end_time(ms)"]
    t = 0.0  # ms
    iteration = 0
    for wave in range(requests // clients):
        rids = [f"r{wave}_{c}" for c in range(clients)]
        start = t
        for step in range(tokens):
            mixed = prefill_every and iteration % prefill_every == prefill_every - 1
            during = step_ms + (stall_ms if mixed else 0.0)
            t += during
            usage = kv_peak * (step + 1) / tokens
            res = json.dumps([{"rid": rid, "iter": step} for rid in rids])
            kind = "Prefill,Decode" if mixed else ("Prefill" if step == 0 else "Decode")
            batch.append(_line([span, res, "", "", during, kind, "p0", clients, 1000, int(usage * 1000),
                                1000 - int(usage * 1000), 0, 0, usage, 1 if mixed else 0, clients, 0, clients, clients,
                                0, BASE_US + (t - during) * 1000, BASE_US + t * 1000]))
            forward.append(f"forward,{t - during},,,{during},{bubble_ms},{clients},Decode,{iteration},0,p0,h,"
                           f"{t - during},{t}")
            iteration += 1
            t += bubble_ms
        for c, rid in enumerate(rids):
            req.append(f"{rid},,{prompt},{tokens},{t - start},{c * 0.5},{step_ms + c},1.0,{start}")
    (folder / "request.csv").write_text("\n".join(req) + "\n")
    (folder / "batch.csv").write_text("\n".join(batch) + "\n")
    (folder / "forward.csv").write_text("\n".join(forward) + "\n")
    (folder / "request_status.csv").write_text("hostuid,pid,start_datetime,relative_timestamp(ms),waiting,running,"
                                               f"swapped,timestamp(ms)\nh,1,,0,0,{clients},{swapped},0\n")
    return folder


def test_ttft_tpot_and_batches_are_read_as_the_tables_say(tmp_path):
    figures = serving_figures(read_serving(_write(tmp_path / "run", clients=4, requests=8, tokens=10, step_ms=20.0,
                                                  kv_peak=0.2)))
    # TTFT: 20, 21, 22, 23 ms for each wave of 4 -> p50 21.5
    assert figures["ttft_ms"]["p50"] == pytest.approx(21.5) and figures["requests"] == 8
    # TPOT: consecutive iteration ends of one request, 20 ms forward + 0.1 ms gap
    assert figures["tpot_ms"]["p50"] == pytest.approx(20.1) and figures["tpot_ms"]["n"] == 8 * 9
    assert figures["batch"]["mean"] == 4 and figures["batch"]["iterations"] == 20
    assert figures["concurrency"]["mean"] == pytest.approx(4.0)
    assert figures["kv"]["peak_usage"] == pytest.approx(0.2)
    # throughput: 80 tokens over two waves of 10 x 20.1 ms
    assert figures["throughput_tok_s"] == pytest.approx(80 / (2 * 10 * 20.1 / 1000), rel=1e-6)


def test_a_batch_that_follows_the_clients_with_room_in_the_cache(tmp_path, runner):
    folder = _write(tmp_path / "run", clients=4, requests=8, tokens=10, step_ms=20.0, kv_peak=0.2)
    result = runner.invoke(app, ["serving", str(folder), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["schema"] == "opprof-advisor/serving/1" and doc["engine"] is None
    first = doc["findings"][0]
    assert first["id"] == "batch-limited-by-clients"
    # 4 sequences at 20 % of the blocks: the cache holds about 20, so throughput up to 5x
    assert first["gain"]["throughput_x_high"] == pytest.approx(5.0)
    assert "kv-cache-memory-budget" in [r["id"] for r in first["remedies"]]


def test_the_kv_blocks_bound_the_batch_by_the_formula_where_the_engine_s_block_size_is_known(tmp_path, runner):
    # vLLM-Ascend (modelRunnerExec spans): 128-token blocks; 2,000-token prompts + 10 output tokens need 16 blocks, so
    # 1,000 blocks hold 62 sequences: fewer than the 200 that 4 sequences at 2 % of the blocks suggest
    folder = _write(tmp_path / "run", clients=4, requests=8, tokens=10, step_ms=20.0, kv_peak=0.02, prompt=2000,
                    span="modelRunnerExec")
    figures = serving_figures(read_serving(folder), "vllm-ascend")
    assert (figures["kv"]["max_batch"], figures["kv"]["block_tokens"]) == (1000 // 16, 128)
    doc = json.loads(runner.invoke(app, ["serving", str(folder), "--format", "json"]).stdout)
    assert doc["engine"] == "vllm-ascend"
    first = doc["findings"][0]
    assert first["id"] == "batch-limited-by-clients" and first["gain"]["throughput_x_high"] == pytest.approx(62 / 4)
    assert "hold 62 sequences" in first["gain"]["basis"] and "blocks of 128 tokens" in first["gain"]["basis"]
    unknown = json.loads(runner.invoke(app, ["serving", str(_write(tmp_path / "other", clients=4, requests=8, tokens=10,
                                                                   step_ms=20.0, kv_peak=0.2)), "--format", "json"]).stdout)
    assert unknown["engine"] is None and unknown["figures"]["kv"]["max_batch"] is None
    assert any("the engine, and so its block size, is not known" in note for note in unknown["notes"])


def test_an_exhausted_cache_is_named_not_the_clients(tmp_path):
    figures = serving_figures(read_serving(_write(tmp_path / "run", clients=16, requests=32, tokens=10, step_ms=20.0,
                                                  kv_peak=0.99, swapped=3)))
    ids = [f["id"] for f in serving_findings(figures)]
    assert ids == ["kv-cache-exhausted"]


def test_prefill_in_decode_iterations_shows_as_a_tpot_tail(tmp_path):
    figures = serving_figures(read_serving(_write(tmp_path / "run", clients=8, requests=8, tokens=100, step_ms=20.0,
                                                  kv_peak=0.9, prefill_every=10, stall_ms=60.0)))
    stall = next(f for f in serving_findings(figures) if f["id"] == "prefill-stalls-decode")
    assert figures["tpot_ms"]["p50"] == pytest.approx(20.1)
    assert stall["gain"]["latency_ms_high"] == pytest.approx(figures["tpot_ms"]["p99"] - 20.1)


def test_a_host_gap_between_forwards(tmp_path):
    figures = serving_figures(read_serving(_write(tmp_path / "run", clients=8, requests=8, tokens=10, step_ms=10.0,
                                                  kv_peak=0.9, bubble_ms=3.0)))
    gap = next(f for f in serving_findings(figures) if f["id"] == "host-gap-between-forwards")
    # 10 forwards of 10 ms; the gap after the last one has no request left in flight: 9 x 3 ms of 100 ms
    assert figures["forward"]["bubble_share"] == pytest.approx(0.27)
    assert gap["gain"]["step_share_high"] == pytest.approx(0.27 / 1.27)


def test_a_pause_with_no_request_in_flight_is_not_a_scheduler_gap(tmp_path):
    # one client, a 50 ms pause between its requests: the gaps fall where nothing is in flight
    figures = serving_figures(read_serving(_write(tmp_path / "run", clients=1, requests=4, tokens=1, step_ms=10.0,
                                                  kv_peak=0.9, bubble_ms=50.0)))
    assert figures["forward"]["bubble_share"] is None
    assert "host-gap-between-forwards" not in [f["id"] for f in serving_findings(figures)]


def test_request_and_batch_summaries_are_both_read(tmp_path):
    folder = _write(tmp_path / "run", clients=4, requests=4, tokens=10, step_ms=20.0, kv_peak=0.5)
    header = "Metric,Average,Max,Min,P50,P90,P99\n"
    (folder / "batch_summary.csv").write_text(header + "prefill_batch_num,1,1,1,1,1,1\n")
    (folder / "request_summary.csv").write_text(header + "subsequent_token_latency (ms),40,390,10,15,200,390\n")
    assert serving_figures(read_serving(folder))["tpot_ms"]["p99"] == 390


def test_kv_usage_in_percent_is_read_as_percent_for_the_whole_table(tmp_path):
    folder = _write(tmp_path / "run", clients=4, requests=4, tokens=10, step_ms=20.0, kv_peak=0.5)
    (folder / "kvcache.csv").write_text("name,start_time,total_blocks,used_blocks,free_blocks,blocks_allocated,"
                                        "blocks_freed,kvcache_usage_rate\nKVCacheStatus,,1000,2,998,0,0,0.2\n"
                                        "KVCacheStatus,,1000,30,970,0,0,3.0\n")
    (folder / "batch.csv").write_text((folder / "batch.csv").read_text().splitlines()[0] + "\n")
    assert serving_figures(read_serving(folder))["kv"]["peak_usage"] == pytest.approx(0.03)


def test_a_folder_without_serving_tables_is_one_line(tmp_path, runner):
    (tmp_path / "notes.csv").write_text("a,b\n1,2\n")
    result = runner.invoke(app, ["serving", str(tmp_path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    [line] = result.stderr.splitlines()
    assert "no ms_service_profiler table" in line and "msserviceprofiler parse" in line


def test_the_html_report_draws_batch_size_and_duration_per_iteration(tmp_path, runner):
    folder = _write(tmp_path / "run", clients=8, requests=8, tokens=100, step_ms=20.0, kv_peak=0.9, prefill_every=10,
                    stall_ms=60.0)
    out = tmp_path / "serving.html"
    result = runner.invoke(app, ["serving", str(folder), "--format", "html", "--output", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert "Batch size per iteration" in page and "Duration per iteration" in page
    assert page.count("<polyline") == 2 and "chunked-prefill-decode-first" in page
    assert "serving-request-length-imbalance" not in page  # a case is a similar run, not a remedy


def test_suggest_on_a_serving_output_gives_the_serving_findings(tmp_path, runner):
    folder = _write(tmp_path / "run", clients=4, requests=8, tokens=10, step_ms=20.0, kv_peak=0.2)
    suggested = runner.invoke(app, ["suggest", str(folder), "--format", "json"])
    assert suggested.exit_code == 0, suggested.output
    served = runner.invoke(app, ["serving", str(folder), "--format", "json"])
    assert json.loads(suggested.stdout) == json.loads(served.stdout)
    assert json.loads(suggested.stdout)["findings"][0]["id"] == "batch-limited-by-clients"
    table = runner.invoke(app, ["suggest", str(folder)])
    assert table.exit_code == 0 and "batch" in table.stdout
    sheet = runner.invoke(app, ["suggest", str(folder), "--format", "csv"])
    assert sheet.exit_code == 1 and "Traceback" not in sheet.output
    assert sheet.stderr.strip() == (f"error: {folder} holds a serving profile: its findings are written as table, json, "
                                    "html, not csv")


def _spans(clients: int, tokens: int, step_ms: float) -> list[tuple]:
    """(name, start ns, end ns, args) of one wave of ``clients`` requests decoded ``tokens`` times together."""
    base = int(BASE_US * 1000)
    ms = 1_000_000
    rows = [("httpReq", base + c * ms, base + c * ms + 100, {"rid": f"r{c}", "recvTokenSize=": 100})
            for c in range(clients)]
    t = base + 10 * ms
    for step in range(tokens):
        rid = [{"rid": f"r{c}", "iter": step} for c in range(clients)]
        end = t + int(step_ms * ms)
        rows.append(("modelExec", t, end, {"rid": rid, "batch_size": clients * 7}))
        rows.append(("forward", t, end, {}))
        rows.append(("KVCacheStatus", end, end, {"TotalBlocks=": 1000, "FreeBlocks=": 900, "UsagePercent=": 10}))
        t = end + ms
    rows += [("httpRes", t, t + 100, {"rid": f"r{c}", "replyTokenSize=": tokens}) for c in range(clients)]
    return rows


def test_a_raw_service_db_is_read_from_its_spans(tmp_path):
    import sqlite3

    # one DB per process (FORMATS-SERVING.md §1): the requests in the API server's, the batches in the engine's
    spans = _spans(4, 10, 20.0)
    folder = tmp_path / "0105-1200" / "Trace_Service"
    folder.mkdir(parents=True)
    for pid, wanted in ((1, {"httpReq", "httpRes"}), (2, {"modelExec", "forward", "KVCacheStatus"})):
        conn = sqlite3.connect(folder / f"ms_service_host-{pid}.db")
        conn.execute("CREATE TABLE slice (id INTEGER, timestamp INTEGER, duration INTEGER, name TEXT, depth INTEGER, "
                     "track_id INTEGER, cat TEXT, args TEXT, cname TEXT, end_time INTEGER, flag_id TEXT, pid INTEGER, "
                     "tid INTEGER)")
        conn.executemany("INSERT INTO slice (id, timestamp, duration, name, args, end_time, pid) VALUES "
                         "(?,?,?,?,?,?,?)", [(i, start, end - start, name, json.dumps(args), end, pid)
                                            for i, (name, start, end, args) in enumerate(spans) if name in wanted])
        conn.commit()
        conn.close()
    figures = serving_figures(read_serving(tmp_path / "0105-1200"))
    # arrivals at 0..3 ms, the first iteration ends at 30 ms: TTFT 30, 29, 28, 27 ms
    assert figures["requests"] == 4 and figures["ttft_ms"]["p50"] == pytest.approx(28.5)
    # one iteration every 21 ms (20 ms forward + 1 ms gap); the batch is the 4 requests, not the tokens
    assert figures["tpot_ms"]["p50"] == pytest.approx(21.0) and figures["batch"]["mean"] == 4
    assert figures["kv"]["peak_usage"] == pytest.approx(0.1)
    assert figures["forward"]["bubble_mean_ms"] == pytest.approx(1.0)


def test_the_2024_prototype_span_table_is_read(tmp_path):
    header = ("pid,tid,event_type,start_time,end_time,mark_id,message,domain,rid,name,type,=recvTokenSize,"
              "=QueueSize,queue,from,to,action,LogicalBlockNum,=deviceKvCache,+WAITING,+RUNNING,+PENDING,+END,"
              "=replyTokenSize,rid_list,token_id_list,batch_size,batch_type,during_time,metrics")
    lines = [header]
    columns = header.split(",")

    def row(**cells):
        return _line([cells.get(c, "") for c in columns])

    for c in range(2):  # the real prototype's rids are numbers (0, 1 ...), read from the CSV as 0.0, 1.0
        lines.append(row(pid=1, start_time=BASE_US + c * 1000, end_time=BASE_US + c * 1000 + 10, rid=c,
                         name="httpReq", **{"=recvTokenSize": 50}))
    t = BASE_US + 5000
    for step in range(3):
        lines.append(row(pid=1, start_time=t, end_time=t + 10000, name="modelExec", rid_list=str([0, 1]),
                         token_id_list=str([step, step]), batch_size=2))
        t += 12000
    for c in range(2):
        lines.append(row(pid=1, start_time=t, end_time=t + 10, rid=c, name="httpRes", **{"=replyTokenSize": 3}))
    (tmp_path / "tx_data_df.csv").write_text("\n".join(lines) + "\n")
    figures = serving_figures(read_serving(tmp_path))
    assert figures["requests"] == 2 and figures["ttft_ms"]["p50"] == pytest.approx(14.5)  # 15 and 14 ms
    assert figures["tpot_ms"]["p50"] == pytest.approx(12.0) and figures["batch"]["mean"] == 2
    # 6 tokens from the first arrival to the last response (41.01 ms); the decode batches named from the iterations
    assert figures["throughput_tok_s"] == pytest.approx(6 / 0.04101, rel=1e-5)
    assert figures["batch"]["decode_mean"] == 2
