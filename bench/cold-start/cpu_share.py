"""Lambda's CPU share for the cold-start harness (issue 30).

Lambda gives a function CPU in proportion to its memory: one vCPU at
1,769 MB, so 7.2 % of one at 128 MB. The harness puts each function's
process into a control group of the CPU controller whose quota is that
share of one CPU per period: cgroup v1 `cpu.cfs_quota_us` over
`cpu.cfs_period_us` (/sys/fs/cgroup/cpu/<group>), or v2 `cpu.max`
("quota period", /sys/fs/cgroup/<group>, the `cpu` controller enabled in the
root's `cgroup.subtree_control`). Needs root (or a delegated group).
"""

from __future__ import annotations

from pathlib import Path

FULL_VCPU_MB = 1769
PERIOD_US = 100_000
ROOT = Path("/sys/fs/cgroup")


def quota_us(memory_mb: int, period_us: int = PERIOD_US) -> int:
    """The quota per period of a function of `memory_mb` (the kernel takes
    no less than 1 ms)."""
    return max(1000, round(period_us * memory_mb / FULL_VCPU_MB))


class CpuShare:
    """One control group capped at the CPU share of `memory_mb`; processes
    are moved into it with `add` (they stay there until they exit). Each
    cold start gets a group of its own (`fresh`), as each Lambda environment
    has its own share: in a shared group one process's use of a period's
    quota would throttle the next process started within that period."""

    def __init__(self, memory_mb: int, period_us: int = PERIOD_US, suffix: str = ""):
        self.memory_mb = memory_mb
        self.fresh_count = 0
        name = f"nurse-call-cold-start-{memory_mb}mb{suffix}"
        quota = quota_us(memory_mb, period_us)
        if (ROOT / "cpu" / "cpu.cfs_quota_us").exists():
            self.version = 1
            self.group = ROOT / "cpu" / name
            self.group.mkdir(exist_ok=True)
            (self.group / "cpu.cfs_period_us").write_text(f"{period_us}\n")
            (self.group / "cpu.cfs_quota_us").write_text(f"{quota}\n")
            burst = self.group / "cpu.cfs_burst_us"
            if burst.exists():
                burst.write_text("0\n")  # no saved-up runtime beyond the quota
        elif (ROOT / "cgroup.controllers").exists():
            self.version = 2
            if "cpu" not in (ROOT / "cgroup.controllers").read_text().split():
                raise RuntimeError("cgroup v2 without the cpu controller")
            control = ROOT / "cgroup.subtree_control"
            if "cpu" not in control.read_text().split():
                control.write_text("+cpu\n")
            self.group = ROOT / name
            self.group.mkdir(exist_ok=True)
            (self.group / "cpu.max").write_text(f"{quota} {period_us}\n")
        else:
            raise RuntimeError(f"no CPU controller under {ROOT} (neither cgroup v1 nor v2)")
        self.period_us = period_us
        self.share = quota / period_us

    def fresh(self) -> CpuShare:
        """A new group with the same quota (drop it with `remove`)."""
        self.fresh_count += 1
        return CpuShare(self.memory_mb, self.period_us, f"-{self.fresh_count}")

    def add(self, pid: int) -> None:
        (self.group / "cgroup.procs").write_text(f"{pid}\n")

    def remove(self) -> None:
        """Drops the group (it must be empty: every process of it exited)."""
        try:
            self.group.rmdir()
        except OSError:
            pass

    def describe(self) -> str:
        return (f"{self.memory_mb} MB: {self.share * 100:.1f} % of a CPU, period "
                f"{self.period_us / 1000:g} ms (cgroup v{self.version} {self.group})")


def open_shares(memories: list[int], period_us: int = PERIOD_US) -> dict[int, CpuShare]:
    """A group per memory size, or SystemExit saying why there is none."""
    try:
        return {memory: CpuShare(memory, period_us) for memory in memories}
    except (OSError, RuntimeError) as error:
        raise SystemExit(
            f"cannot cap the CPU share ({error}): the CPU controller of cgroup v1 "
            f"({ROOT}/cpu) or v2 ({ROOT}/cgroup.controllers) must be writable, "
            "i.e. run as root; or pass --memory full to run at a full core"
        ) from error
