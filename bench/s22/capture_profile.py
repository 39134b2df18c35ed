# Where a task's capture spends its time in the worker (kopt.capture's
# run_capture, as `kopt capture` asks it): cProfile's top functions, and
# the stack every 20 s while it runs (faulthandler), for a capture that
# takes minutes (the LSTM: >100 s on an H200).
#   PYTHONPATH=python python bench/s22/capture_profile.py TASK
import cProfile, faulthandler, pstats, sys, time
from kopt.capture import run_capture
from kopt.device import Device

faulthandler.dump_traceback_later(20, repeat=True)
import os
dev = Device(os.environ.get("DEV", "cuda"))
t0 = time.time()
prof = cProfile.Profile()
prof.enable()
reply = run_capture({"task": sys.argv[1]}, dev)
prof.disable()
faulthandler.cancel_dump_traceback_later()
print(f"capture took {time.time() - t0:.1f} s; kernels {len(reply.get('kernels', []))}")
pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
