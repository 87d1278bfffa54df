#!/usr/bin/env python3
"""The deterministic cost of the everyday commands, against budgets.

Wall-clock time of a 1 ms command moves by tens of percent with the
machine's load; the instructions it executes and the page faults it takes
do not. This runs each command on a fresh simulated 8-GPU host and counts
  - instructions executed in user space, the dynamic loader included
    (valgrind --tool=callgrind; children are not traced), and
  - minor page faults of a native run (getrusage of the child).
With --check BUDGETS it fails, naming the figure and the budget, when a
command exceeds its budget (docs/perf.md says how the budgets were set).

  bench/command_cost.py [--check bench/command_cost_budgets.txt] [--only NAME] BINARY
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

# name -> (setup commands, measured command); each on a fresh host.
COMMANDS = {
    "status_json": ([["reserve", "--gpus", "4", "--duration", "1h"]], ["status", "--json"]),
    "reserve": ([], ["reserve", "--gpus", "1", "--duration", "1h"]),
    "release": ([["reserve", "--gpus", "1", "--duration", "1h"]], ["release"]),
    # The first run removes the job cgroups that other jobs left behind
    # (host/job_cgroup.cc), work that depends on what ran before.
    "run_true": ([["run", "--gpus", "1", "--", "true"]], ["run", "--gpus", "1", "--", "true"]),
}


def environment(state_dir):
    # A fixed, small environment: its size is part of what the loader and
    # the option parser read.
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": state_dir,
        "USER": "costcheck",
        "LOGNAME": "costcheck",
        "CANHAZGPU_STATE": os.path.join(state_dir, "state.db"),
        "NO_COLOR": "1",
        "LC_ALL": "C",
    }


def fresh_host(binary, state_dir, setup):
    env = environment(state_dir)
    subprocess.run([binary, "admin", "--provider", "fake", "--gpus", "8"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    for args in setup:
        subprocess.run([binary] + args, env=env, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return env


def instructions(binary, setup, args):
    with tempfile.TemporaryDirectory(prefix="cost.") as d:
        env = fresh_host(binary, d, setup)
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", binary] + args,
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if out.returncode != 0:
            sys.exit(f"command_cost: {' '.join(args)} failed under valgrind:\n{out.stderr}")
        m = re.search(r"Collected : (\d+)", out.stderr)
        if not m:
            sys.exit(f"command_cost: no instruction count from valgrind:\n{out.stderr}")
        return int(m.group(1))


def minor_faults(binary, setup, args):
    with tempfile.TemporaryDirectory(prefix="cost.") as d:
        env = fresh_host(binary, d, setup)
        pid = os.fork()
        if pid == 0:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.execve(binary, [binary] + args, env)
        _, status, usage = os.wait4(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"command_cost: {' '.join(args)} exited with status {status}")
        # The child's faults only: `run`'s own child (`true`) is waited for
        # by it, so its faults count too, as they do for the user.
        return usage.ru_minflt


def shown(budget):
    return "-" if budget is None else f"{budget:,}"


def read_budgets(path):
    budgets = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 3 or parts[0] not in COMMANDS:
                sys.exit(f"{path}:{n}: expected 'COMMAND INSTRUCTIONS PAGE_FAULTS' "
                         f"with COMMAND one of {', '.join(COMMANDS)}")
            budgets[parts[0]] = (int(parts[1]), int(parts[2]))
    return budgets


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", metavar="BUDGETS", help="fail when a budget is exceeded")
    parser.add_argument("--only", choices=sorted(COMMANDS), help="measure this command alone")
    parser.add_argument("binary", help="the canhazgpu binary")
    a = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("command_cost: valgrind is not installed (scripts/setup.sh installs it)")
    budgets = read_budgets(a.check) if a.check else {}
    binary = os.path.abspath(a.binary)
    failed = []
    print(f"{'command':<12} {'instructions':>13} {'budget':>11} {'page faults':>12} {'budget':>7}")
    measured = {a.only: COMMANDS[a.only]} if a.only else COMMANDS
    for name, (setup, args) in measured.items():
        ins_budget, fault_budget = budgets.get(name, (None, None))
        ins = instructions(binary, setup, args)
        faults = minor_faults(binary, setup, args)
        # Work on a timer (run rescans its job every second) runs once more
        # when the machine is busy and valgrind slow: a figure over budget
        # is measured twice more and the least of the three counts.
        for _ in range(2):
            if ins_budget is not None and ins > ins_budget:
                ins = min(ins, instructions(binary, setup, args))
            if fault_budget is not None and faults > fault_budget:
                faults = min(faults, minor_faults(binary, setup, args))
        print(f"{name:<12} {ins:>13,} {shown(ins_budget):>11} {faults:>12,} {shown(fault_budget):>7}")
        if ins_budget is not None and ins > ins_budget:
            failed.append(f"{name}: {ins:,} instructions, over its budget of {ins_budget:,}")
        if fault_budget is not None and faults > fault_budget:
            failed.append(f"{name}: {faults:,} page faults, over its budget of {fault_budget:,}")
    missing = [n for n in measured if budgets and n not in budgets]
    for name in missing:
        failed.append(f"{name}: no budget in {a.check}")
    for f in failed:
        print(f"command_cost: {f} ({a.check})", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
