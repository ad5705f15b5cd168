"""Ranks started by ``torchrun`` (``pypto.runtime.distributed.launch``), checked against torch.

Each test runs real ``torchrun`` processes on this machine: ``--standalone`` (every process on one
host), and two torchrun invocations with ``--nnodes=2`` and a static rendezvous on localhost,
which the launcher treats as two hosts (the host orchestrator and rank 0 on one, rank 1 on the
other). The script (written below) runs an allreduce-style program: every rank puts its x into its
window, then a barrier, then every rank sums every rank's window into its row of y. torchrun's
RANK 0 runs the script; the other processes are the program's ranks.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch.distributed")

from _dist_programs import needs_host_comm_path

TORCHRUN = Path(sys.executable).with_name("torchrun")

SCRIPT = textwrap.dedent(
    """
    import os
    import signal
    import sys

    import torch

    import pypto.language as pl
    import pypto.language.distributed as pld
    from pypto.ir import DistributedConfig
    from pypto.runtime import RunConfig
    from pypto.runtime.distributed import DistributedRankError

    COLS = 24


    @pl.jit.incore
    def _sum_all(
        x: pl.Tensor[[1, COLS], pl.FP32],
        y: pl.Out[pl.Tensor[[1, COLS], pl.FP32]],
        inbox: pld.DistributedTensor[[1, COLS], pl.FP32],
        sig: pld.DistributedTensor[[4, 1], pl.INT32],
    ):
        n = pld.nranks(pld.get_comm_ctx(inbox))
        inbox = pl.store(pl.load(x, [0, 0], [1, COLS]), [0, 0], inbox)
        sig = pld.tensor.barrier(sig)
        s = pl.full([1, COLS], dtype=pl.FP32, value=0.0)
        for p in pl.range(n):
            s = pl.add(s, pld.tile.remote_load(inbox, peer=p, offsets=[0, 0], shape=[1, COLS]))
        y = pl.store(s, [0, 0], y)
        return y


    @pl.jit
    def _per_rank(
        x: pl.Tensor[[1, COLS], pl.FP32],
        y: pl.Out[pl.Tensor[[1, COLS], pl.FP32]],
        inbox: pld.DistributedTensor[[1, COLS], pl.FP32],
        sig: pld.DistributedTensor[[4, 1], pl.INT32],
    ):
        return _sum_all(x, y, inbox, sig)


    @pl.jit.host
    def host(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        inbox = pld.alloc_window_buffer([1, COLS], dtype=pl.FP32)
        sig = pld.alloc_window_buffer([4, 1], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            _per_rank(
                x[r],
                y[r],
                pld.window(inbox, [1, COLS], dtype=pl.FP32),
                pld.window(sig, [4, 1], dtype=pl.INT32),
                device=r,
            )


    BIG = 65536  # rows: a [2, BIG, COLS] FP32 host tensor is 12.6 MB


    @pl.jit.incore
    def _last_row(x: pl.Tensor[[BIG, COLS], pl.FP32], y: pl.Out[pl.Tensor[[1, COLS], pl.FP32]]):
        y = pl.store(pl.load(x, [BIG - 1, 0], [1, COLS]), [0, 0], y)
        return y


    @pl.jit
    def _last_row_chip(x: pl.Tensor[[BIG, COLS], pl.FP32], y: pl.Out[pl.Tensor[[1, COLS], pl.FP32]]):
        return _last_row(x, y)


    @pl.jit.host
    def last_rows(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        for r in pl.range(pld.world_size()):
            _last_row_chip(x[r], y[r], device=r)


    def resident_checks(w):
        # resident tensors under torchrun: kept by RANK 0, carried to the ranks over gloo
        g = torch.Generator().manual_seed(7)
        x = torch.randint(-9, 10, (2, 1, COLS), generator=g).float()
        total = x.sum(0, keepdim=True).expand(2, 1, COLS)
        xt = w.alloc_tensor([2, 1, COLS], torch.float32, init=x)
        yt = w.alloc_tensor([2, 1, COLS], torch.float32)
        out = torch.zeros(2, 1, COLS)
        w(xt, yt)
        torch.testing.assert_close(w.copy_from(yt, out), total, rtol=0, atol=0)
        w(yt, xt)  # the last results as inputs: they stayed
        torch.testing.assert_close(w.copy_from(xt, out), 2 * total, rtol=0, atol=0)
        stacked = w.alloc_stacked_tensor(x)
        w(stacked, yt)
        torch.testing.assert_close(w.copy_from(yt, out), total, rtol=0, atol=0)
        ptr = w.malloc(x.nbytes)
        w.copy_to(ptr, x.data_ptr(), x.nbytes)
        w.copy_from(out.data_ptr(), ptr, out.nbytes)
        torch.testing.assert_close(out, x, rtol=0, atol=0)
        w.free(ptr)
        print("RESIDENT OK", flush=True)


    def check(w, seed):
        g = torch.Generator().manual_seed(seed)
        x = torch.randint(-9, 10, (2, 1, COLS), generator=g).float()
        y = torch.full((2, 1, COLS), -1.0)
        w(x, y)
        torch.testing.assert_close(y, x.sum(0, keepdim=True).expand(2, 1, COLS), rtol=0, atol=0)


    mode = sys.argv[1]
    x0, y0 = torch.zeros(2, 1, COLS), torch.zeros(2, 1, COLS)
    config = DistributedConfig(device_ids=[0, 1], timeout=60)
    compiled = host.compile(x0, y0, config=RunConfig(distributed_config=config))
    with compiled.prepare() as w:
        print("DATA PATH", w.data_path, flush=True)
        # the ranks are torchrun's processes, not children of this one
        for pid in w.rank_pids:
            assert pid != os.getpid()
            if os.path.exists(f"/proc/{pid}/stat"):
                ppid = int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
                assert ppid != os.getpid(), (pid, ppid)
        check(w, 1)
        if mode == "shared_memory":
            resident_checks(w)
            try:
                compiled.prepare()
            except RuntimeError as exc:
                print("ONE AT A TIME", exc, flush=True)
        if mode == "forge":
            # another client of torchrun's store writes commands for the launched ranks: a
            # pickled payload that would create a marker, unauthenticated JSON, a forged "exit"
            import base64
            import json
            import pickle
            from datetime import timedelta

            import torch.distributed as dist

            class Payload:
                def __reduce__(self):
                    return (os.system, ("touch pwned",))

            evil = base64.b64encode(pickle.dumps(Payload())).decode()
            attacker = dist.TCPStore(
                os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), timeout=timedelta(seconds=30)
            )
            seq = w._group._seq  # (a PrefixStore joins its prefix and a key with "/")
            for s in range(seq, seq + 4):
                attacker.set(f"pypto/0//s0//cmd/{s}", json.dumps({"op": "run", "call": evil}))
            attacker.set(f"pypto/0//s0//cmd/{seq + 4}", pickle.dumps(Payload()))
            attacker.set("pypto/0//session/1", json.dumps("exit"))
            for seed in (4, 5, 6):
                check(w, seed)
            print("FORGED", "pwned" if os.path.exists("pwned") else "nothing ran", flush=True)
        if mode == "kill":
            os.kill(w.rank_pids[1], signal.SIGKILL)
            try:
                while True:
                    check(w, 2)
            except DistributedRankError as exc:
                print(f"RANK ERROR {exc.rank}: {exc}", flush=True)
                sys.exit(0)
        check(w, 2)
    if mode == "shared_memory":
        # asked for: every rank is on this host, so the windows may be shared memory
        shm = DistributedConfig(device_ids=[0, 1], data_path="shared_memory")
        with compiled.prepare(RunConfig(distributed_config=shm)) as w:
            print("DATA PATH", w.data_path, flush=True)
            check(w, 3)
    elif mode == "two_hosts":
        shm = DistributedConfig(device_ids=[0, 1], data_path="shared_memory")
        try:
            compiled.prepare(RunConfig(distributed_config=shm))
        except ValueError as exc:
            print("REFUSED", exc, flush=True)
    if mode == "shared_memory":  # a host tensor far beyond what the store carries comfortably
        xb = torch.randn(2, BIG, COLS)
        yb = torch.zeros(2, 1, COLS)
        last_rows.compile(xb, yb, config=RunConfig(distributed_config=config))(xb, yb)
        torch.testing.assert_close(yb, xb[:, -1:, :], rtol=0, atol=0)
        print("BIG OK", flush=True)
    # a one-shot call: another worker on the same launched ranks
    x = torch.arange(2 * COLS, dtype=torch.float32).reshape(2, 1, COLS)
    y = torch.zeros(2, 1, COLS)
    compiled(x, y)
    torch.testing.assert_close(y, x.sum(0, keepdim=True).expand(2, 1, COLS), rtol=0, atol=0)
    print("ALLREDUCE OK", flush=True)
    """
)


def _env() -> dict[str, str]:
    import pypto.ir
    import pypto.runtime

    paths = [str(Path(m.__file__).parents[2]) for m in (pypto.ir, pypto.runtime)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")])
    env.pop("PYPTO_DIST_DATA_PATH", None)
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(tmp_path: Path, *options: str, mode: str, secret_file: str = "") -> subprocess.Popen[str]:
    script = tmp_path / "allreduce.py"
    script.write_text(SCRIPT)
    env = _env()
    env.pop("PYPTO_DIST_SECRET_FILE", None)
    if secret_file:
        env["PYPTO_DIST_SECRET_FILE"] = secret_file
    return subprocess.Popen(
        [str(TORCHRUN), *options, "-m", "pypto.runtime.distributed.launch", str(script), mode],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        out, _ = proc.communicate(timeout=150)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"torchrun did not finish in 150 s:\n{out}")
    return proc.returncode, out


def test_torchrun_standalone_runs_the_ranks_of_a_program_on_both_data_paths(tmp_path: Path) -> None:
    needs_host_comm_path()  # torchrun's launched ranks use the process-group path
    rc, out = _finish(_torchrun(tmp_path, "--standalone", "--nproc-per-node=3", mode="shared_memory"))
    assert rc == 0, out
    # by default the launched ranks' windows are on the process-group path; asked for, and with
    # every rank on this host, shared memory
    paths = [line.split()[-1] for line in out.splitlines() if line.startswith("DATA PATH ")]
    assert paths == ["process_group", "shared_memory"], out
    assert "ALLREDUCE OK" in out, out
    assert "RESIDENT OK" in out, out  # resident tensors and malloc blocks, over gloo
    assert "BIG OK" in out, out  # a 12.6 MB host tensor
    assert "ONE AT A TIME DistributedWorker: under torchrun the launched ranks serve one worker" in out, out


def test_the_launcher_refuses_a_run_without_torchruns_environment(monkeypatch) -> None:
    from pypto.runtime.distributed import launch

    for var in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(
        SystemExit, match=r"expected torchrun's environment, but RANK, WORLD_SIZE, .* is not set"
    ):
        launch.main(["script.py"])
    with pytest.raises(SystemExit, match=r"expected a script path or -m module, got \['--x'\]"):
        launch.main(["--x"])
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "1")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", "1")
    with pytest.raises(SystemExit, match=r"expected WORLD_SIZE >= 2 .*got WORLD_SIZE=1"):
        launch.main(["script.py"])


def test_a_program_for_another_rank_count_is_refused_naming_both() -> None:
    from types import SimpleNamespace

    from pypto.runtime.distributed.worker import _check_launched

    plan = SimpleNamespace(name="host", world_size=2, device_ids=(0, 1))  # what it reads of a plan
    with pytest.raises(
        ValueError,
        match=r"program 'host' has 2 ranks .* torchrun started 3 rank processes .*"
        r"WORLD_SIZE=4\); start torchrun with 3 processes in all",
    ):
        _check_launched(SimpleNamespace(world_size=3, all_local=True), plan, "process_group")
    with pytest.raises(ValueError, match=r"DistributedWorker\(data_path\): 'shared_memory' needs every rank"):
        _check_launched(SimpleNamespace(world_size=2, all_local=False), plan, "shared_memory")
    _check_launched(SimpleNamespace(world_size=2, all_local=True), plan, "shared_memory")


def test_two_torchrun_nodes_run_one_program_over_the_process_group(tmp_path: Path) -> None:
    needs_host_comm_path()  # torchrun's launched ranks use the process-group path
    port = _free_port()
    common = ["--nnodes=2", "--rdzv-backend=static", "--master-addr=127.0.0.1", f"--master-port={port}"]
    # the secret shared by the two "hosts": a private file both name (PYPTO_DIST_SECRET_FILE)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    secret = private / "secret"
    secret.write_bytes(os.urandom(32))
    secret.chmod(0o600)
    node1 = _torchrun(
        tmp_path, *common, "--node-rank=1", "--nproc-per-node=1", mode="two_hosts", secret_file=str(secret)
    )
    node0 = _torchrun(
        tmp_path, *common, "--node-rank=0", "--nproc-per-node=2", mode="two_hosts", secret_file=str(secret)
    )
    rc0, out0 = _finish(node0)
    rc1, out1 = _finish(node1)
    assert rc0 == 0, out0
    assert rc1 == 0, out1
    assert "not authenticated" not in out0, out0
    assert "DATA PATH process_group" in out0, out0
    assert "REFUSED DistributedWorker(data_path): 'shared_memory' needs every rank on this host" in out0, out0
    assert "ALLREDUCE OK" in out0, out0


def test_forged_commands_in_torchruns_store_run_nothing_and_disturb_nothing(tmp_path: Path) -> None:
    needs_host_comm_path()  # torchrun's launched ranks use the process-group path
    rc, out = _finish(_torchrun(tmp_path, "--standalone", "--nproc-per-node=3", mode="forge"))
    assert rc == 0, out
    assert "FORGED nothing ran" in out, out
    assert not (tmp_path / "pwned").exists()
    assert "dropped a message at 'pypto/0/s0/cmd/" in out, out
    assert "ALLREDUCE OK" in out, out  # the forged "exit" did not end the ranks' sessions


def test_a_launched_rank_that_dies_fails_the_dispatch_naming_it(tmp_path: Path) -> None:
    needs_host_comm_path()  # torchrun's launched ranks use the process-group path
    rc, out = _finish(_torchrun(tmp_path, "--standalone", "--nproc-per-node=3", mode="kill"))
    # torchrun reports the killed process (RANK 2, program rank 1) as the run's failure
    assert rc != 0, out
    assert "RANK ERROR 1: rank 1 " in out, out
    assert "ALLREDUCE OK" not in out, out


@pytest.mark.slow
def test_a_rank_dying_on_another_node_fails_the_dispatch_by_its_heartbeat(tmp_path: Path) -> None:
    needs_host_comm_path()  # torchrun's launched ranks use the process-group path
    # no SIGTERM reaches the orchestrator here: node 1's agent stops only its own processes, and the
    # orchestrator names the rank once its heartbeat has stood still
    port = _free_port()
    common = ["--nnodes=2", "--rdzv-backend=static", "--master-addr=127.0.0.1", f"--master-port={port}"]
    node1 = _torchrun(tmp_path, *common, "--node-rank=1", "--nproc-per-node=1", mode="kill")
    node0 = _torchrun(tmp_path, *common, "--node-rank=0", "--nproc-per-node=2", mode="kill")
    _, out0 = _finish(node0)
    rc1, out1 = _finish(node1)
    assert rc1 != 0, out1
    # no shared secret file across hosts: the orchestrator says its commands are not authenticated
    assert "the ranks' commands are not authenticated" in out0, out0
    assert "RANK ERROR 1: rank 1 stopped answering (no heartbeat for " in out0, out0
