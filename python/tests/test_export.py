"""`kopt export` end to end on the CPU: the real kopt binary writes the files,
the real nvcc compiles the embedded kernels, and the exported ModelNew files
are judged by kernelbench_eval.py (KernelBench's procedure) in a subprocess
that cannot import kopt.

Needs the kopt binary ($KOPT_BINARY, else build/kopt); the compile tests also
need nvcc. Without them the tests report skipped."""

import importlib.util
import inspect
import itertools
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch

from kopt.tasks import Reference, abi_inputs, load_task

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(HERE, "data", "export")
KB_EVAL = os.path.join(HERE, "kernelbench_eval.py")
L1 = os.path.join(REPO, "tasks", "level1")
L2 = os.path.join(REPO, "tasks", "level2")


def kopt_binary():
    b = os.environ.get("KOPT_BINARY") or os.path.join(REPO, "build", "kopt")
    return b if os.access(b, os.X_OK) else None


def have_nvcc():
    return bool(os.environ.get("KOPT_NVCC") or shutil.which("nvcc") or os.access("/usr/local/cuda/bin/nvcc", os.X_OK))


needs_kopt = pytest.mark.skipif(kopt_binary() is None, reason="the kopt binary is not built (set KOPT_BINARY)")
needs_nvcc = pytest.mark.skipif(not have_nvcc(), reason="nvcc not found")
pytestmark = needs_kopt


def data(name):
    return os.path.join(DATA, name)


@pytest.fixture(scope="session")
def cache(tmp_path_factory):
    """One kernel cache for the session: each kernel is compiled once."""
    return str(tmp_path_factory.mktemp("kopt-export-cache"))


def export(task, candidate, out, *extra):
    """Runs `kopt export` and returns the written ModelNew file."""
    env = dict(os.environ, KOPT_ROOT=REPO)
    p = subprocess.run([kopt_binary(), "export", "--task", task, "--candidate", candidate, "--out", str(out),
                        "--arch", "sm_90", *extra], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    written = [line[len("wrote "):] for line in p.stdout.splitlines() if line.startswith("wrote ")]
    return next(w for w in written if w.endswith("_modelnew.py"))


def clean_env(cache):
    """No kopt anywhere: no PYTHONPATH, no kopt variables; the cwd is set by the caller."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KOPT_ROOT", "KOPT_INCLUDE", "KOPT_CACHE")}
    env["KOPT_EXPORT_CACHE"] = cache
    return env


def run_clean(args, cache, cwd):
    p = subprocess.run(args, capture_output=True, text=True, env=clean_env(cache), cwd=cwd)
    probe = subprocess.run([sys.executable, "-c", "import kopt"], capture_output=True, text=True,
                           env=clean_env(cache), cwd=cwd)
    assert probe.returncode != 0 and "No module named 'kopt'" in probe.stderr, "kopt is importable there"
    return p


def kb_eval(task, new, cache, cwd, *extra):
    """kernelbench_eval.py on the CPU in a kopt-free subprocess; returns its verdict."""
    p = run_clean([sys.executable, KB_EVAL, task, new, "--device", "cpu", *extra], cache, cwd)
    lines = p.stdout.strip().splitlines()
    assert lines, p.stderr
    verdict = json.loads(lines[-1])
    return verdict, p


_counter = itertools.count()


def import_file(path):
    spec = importlib.util.spec_from_file_location(f"_exported_{next(_counter)}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seeded(cls, args, seed=42):
    torch.manual_seed(seed)
    return cls(*args)


def assert_same_state(a, b):
    pa, pb = list(a.named_parameters()), list(b.named_parameters())
    assert [n for n, _ in pa] == [n for n, _ in pb]
    assert all(torch.equal(x, y) for (_, x), (_, y) in zip(pa, pb))
    ba, bb = list(a.named_buffers()), list(b.named_buffers())
    assert [n for n, _ in ba] == [n for n, _ in bb]
    assert all(torch.equal(x, y) for (_, x), (_, y) in zip(ba, bb))


# ----------------------------------------------------------------------------
# Hybrid candidates: exported, then judged by the KernelBench procedure.

HYBRIDS = [
    ("t_elementwise.py", "h_elementwise.py"),
    ("t_reduce_dim.py", "h_reduce_dim.py"),
    ("t_linear.py", "h_linear.py"),
    ("t_conv_bn.py", "h_conv_bn.py"),
    ("t_multi_out.py", "h_multi_out.py"),
    ("t_scalars.py", "h_scalars.py"),
]


@pytest.mark.parametrize("task,hybrid", HYBRIDS, ids=[h for _, h in HYBRIDS])
def test_hybrid_export_passes_kernelbench_on_cpu(task, hybrid, tmp_path, cache):
    new = export(data(task), data(hybrid), tmp_path / "out")
    with open(new) as f, open(data(hybrid)) as g:
        assert f.read() == g.read(), "a hybrid that does not import kopt is exported unchanged"
    verdict, p = kb_eval(data(task), new, cache, tmp_path)
    assert verdict["compiled"] and verdict["correct"], p.stdout + p.stderr
    assert verdict["params_match"] and verdict["param_names_match"], verdict
    assert verdict["buffers_match"] and verdict["buffer_names_match"], verdict
    assert verdict["trials"] == "(5 / 5)"
    if hybrid == "h_multi_out.py":
        assert any("tuple output" in n for n in verdict["notes"])


def test_loader_reports_parameters_created_differently(tmp_path, cache):
    verdict, p = kb_eval(data("t_linear.py"), data("h_linear_reordered.py"), cache, tmp_path)
    assert verdict["compiled"] and not verdict["correct"], verdict
    assert not verdict["params_match"] and not verdict["param_names_match"]
    assert p.returncode == 1


@needs_nvcc
def test_hybrid_with_kopt_load_cuda_runs_without_kopt(tmp_path, cache):
    new = export(data("t_linear.py"), data("h_loadcuda.py"), tmp_path / "out")
    text = open(new).read()
    assert "\nimport kopt\n" not in text and "kopt = _kopt_runtime  # kopt export: was `import kopt`" in text
    assert "CompileError = _kopt_runtime.CompileError  # kopt export" in text
    for loader in ("context", "module"):
        verdict, p = kb_eval(data("t_linear.py"), new, cache, tmp_path, "--loader", loader)
        assert verdict["compiled"] and verdict["correct"], p.stdout + p.stderr
        assert verdict["params_match"] and verdict["param_names_match"], verdict
    # load_cuda compiled the kernel with the embedded recipe into the export cache.
    built = [os.path.join(r, f) for r, _, fs in os.walk(cache) for f in fs if f == "build.txt"]
    recipes = [open(b).read() for b in built]
    assert any("bias_relu_scale" in open(os.path.join(os.path.dirname(b), "candidate.cu")).read() and
               " -std=c++17 -O3 -lineinfo -Xcompiler -fPIC -shared -Xptxas -v "
               "-gencode=arch=compute_90,code=sm_90 -I" in r for b, r in zip(built, recipes)), recipes


def test_hybrid_importing_every_loader_name(tmp_path, cache):
    new = export(data("t_elementwise.py"), data("h_star.py"), tmp_path / "out")
    verdict, p = kb_eval(data("t_elementwise.py"), new, cache, tmp_path)
    assert verdict["compiled"] and verdict["correct"], p.stdout + p.stderr


@needs_nvcc
def test_level2_hybrid_solution_exports_self_contained(tmp_path, cache):
    """tasks/level2's solution compiles through kopt.load_cuda at import. The
    export imports and compiles with no kopt, builds ModelNew with Model's
    parameters under the seed, and its kernel refuses CPU tensors clearly.
    (Its forward is a 8192x4096x4096 GEMM: not run on the CPU.)"""
    task = os.path.join(L2, "01_linear_gelu_scale.py")
    new = export(task, os.path.join(L2, "solutions", "01_linear_gelu_scale.py"), tmp_path / "out")
    script = f"""
import sys, torch
sys.path.insert(0, {HERE!r})
import kernelbench_eval as kb
context = {{}}
exec(open({task!r}).read(), context)
Model, init = context["Model"], context["get_init_inputs"]()
kb.set_seed(42)
ref = Model(*init)
exec(compile(open({new!r}).read(), {new!r}, "exec"), context)
kb.set_seed(42)
new = context["ModelNew"](*init)
assert kb.same_tensors(list(ref.named_parameters()), list(new.named_parameters())) == (True, True)
k = context["_k"]
assert k.path.startswith(sys.argv[1]), k.path
x = torch.zeros(2, 4)
try:
    k([x, torch.zeros(4), torch.ones(1)], [torch.empty(2, 4)])
except RuntimeError as e:
    print("refused:", e)
"""
    p = run_clean([sys.executable, "-c", script, cache], cache, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "refused: the kernel needs CUDA tensors but got one on cpu" in p.stdout, p.stdout


# ----------------------------------------------------------------------------
# cuda candidates: the exported ModelNew imports, has Model's parameters and
# signature, finds output shapes without running the reference, passes the ABI
# inputs in kopt's order, and its kernel compiles with the embedded recipe.

def small(*shape):
    return lambda: [torch.randn(*shape)]


CUDA_EXPORTS = {
    # task file: (candidate, small forward arguments)
    os.path.join(L1, "01_relu.py"): (os.path.join(L1, "solutions", "01_relu.cu"), small(8, 32)),
    os.path.join(L1, "06_layernorm.py"): (os.path.join(L1, "solutions", "06_layernorm.cu"), small(3, 4096)),
    os.path.join(L1, "10_sum_dim.py"): (os.path.join(L1, "solutions", "10_sum_dim.cu"), small(2, 5, 7)),
    os.path.join(L1, "13_argmax.py"): (os.path.join(L1, "solutions", "13_argmax.cu"), small(4, 9)),
    os.path.join(L1, "19_mse_loss.py"): (os.path.join(L1, "solutions", "19_mse_loss.cu"),
                                         lambda: [torch.randn(4, 6), torch.randn(4, 6)]),
    os.path.join(L1, "30_var_mean.py"): (os.path.join(L1, "solutions", "30_var_mean.cu"), small(5, 11)),
    data("t_conv_bn.py"): (data("noop.cu"), small(2, 3, 9, 9)),
    data("t_scalars.py"): (data("noop.cu"), lambda: [torch.randn(4, 8), 0.25, 7, False]),
    data("t_multi_out.py"): (data("noop.cu"), small(3, 6)),
    data("t_reduce_dim.py"): (data("noop.cu"), small(2, 3, 4)),
}


@pytest.fixture(scope="module")
def cuda_exports(tmp_path_factory):
    out = tmp_path_factory.mktemp("cuda-exports")
    return {task: export(task, cand, out / os.path.basename(task)[:-3]) for task, (cand, _) in CUDA_EXPORTS.items()}


@pytest.mark.parametrize("task", list(CUDA_EXPORTS), ids=[os.path.basename(t) for t in CUDA_EXPORTS])
def test_cuda_export_matches_model_and_kopts_abi(task, cuda_exports):
    cand, make_args = CUDA_EXPORTS[task]
    new_path = cuda_exports[task]
    out_dir = os.path.dirname(new_path)
    name = os.path.basename(cand)[:-3]
    # The layout: the .cu as given, kopt/abi.h beside it, the ModelNew file, a README.
    assert sorted(os.listdir(out_dir)) == sorted([name + ".cu", "kopt", name + "_modelnew.py", "README.md"])
    with open(cand) as f, open(os.path.join(out_dir, name + ".cu")) as g:
        assert f.read() == g.read()
    with open(os.path.join(REPO, "include", "kopt", "abi.h")) as f, open(os.path.join(out_dir, "kopt", "abi.h")) as g:
        assert f.read() == g.read()

    m = import_file(new_path)
    assert m._KOPT_CUDA_SOURCE == open(cand).read()
    assert m._KOPT_RECIPE[:9] == ["-std=c++17", "-O3", "-lineinfo", "-Xcompiler", "-fPIC", "-shared", "-Xptxas",
                                  "-v", "-gencode=arch=compute_90,code=sm_90"]
    task_module = load_task(task)
    init = task_module.get_init_inputs()
    assert inspect.signature(m.ModelNew) == inspect.signature(task_module.Model)
    ref, new = seeded(task_module.Model, init), seeded(m.ModelNew, init)
    assert_same_state(ref, new)

    torch.manual_seed(0)
    args = make_args()
    with torch.no_grad():
        out = ref(*args)
    outs = [out] if isinstance(out, torch.Tensor) else list(out)
    specs, template, how = m.kopt_output_specs(new, *args)
    assert how == "meta", "derived without running the reference"
    assert specs == [(tuple(o.shape), o.dtype) for o in outs]
    assert (template is None) == isinstance(out, torch.Tensor)

    kopt_ref = Reference(task_module, torch.device("cpu"), 42)
    expected = abi_inputs(kopt_ref, args, kopt_ref.state_tensors())
    got, device = m.kopt_abi_inputs(new, *args)
    assert device == torch.device("cpu")
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert (g.shape, g.dtype) == (e.shape, e.dtype)
        assert torch.equal(g, e)


@needs_nvcc
@pytest.mark.parametrize("task", [os.path.join(L1, "01_relu.py"), os.path.join(L1, "06_layernorm.py"),
                                  data("t_conv_bn.py")], ids=["01_relu", "06_layernorm", "t_conv_bn"])
def test_cuda_export_compiles_with_its_recipe_without_kopt(task, cuda_exports, cache, tmp_path):
    new = cuda_exports[task]
    script = f"""
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("exported", {new!r})
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
so = m.kopt_build()
assert so.startswith(sys.argv[1]) and so.endswith("candidate.so"), so
print("built", so)
init = m.get_init_inputs()
torch.manual_seed(42)
model = m.ModelNew(*init)
try:
    model(torch.zeros(1))
except RuntimeError as e:
    print("refused:", e)
"""
    p = run_clean([sys.executable, "-c", script, cache], cache, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "built " in p.stdout
    assert "runs a CUDA kernel, but torch sees no CUDA device." in p.stdout, p.stdout
    build = open(os.path.join(os.path.dirname(p.stdout.split("built ")[1].split()[0]), "build.txt")).read()
    assert " -gencode=arch=compute_90,code=sm_90 -I" in build and " -o candidate.so candidate.cu" in build


def test_cuda_export_under_kernelbench_on_cpu_is_a_clear_runtime_error(cuda_exports, cache, tmp_path):
    task = data("t_scalars.py")
    verdict, p = kb_eval(task, cuda_exports[task], cache, tmp_path, "--trials", "1")
    assert verdict["compiled"] and not verdict["correct"]
    assert verdict["params_match"] and verdict["buffers_match"]
    assert "torch sees no CUDA device" in verdict["error"], verdict


def host_kernel(tmp_path, flag):
    """host_kernels.c built for the CPU: a stand-in for the GPU kernel."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    so = tmp_path / f"{flag}.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", f"-D{flag}", f"-I{os.path.join(REPO, 'include')}",
                    data("host_kernels.c"), "-o", str(so)], check=True)
    return str(so)


def on_host(module, so):
    """Drives the exported forward path with a host-memory kernel instead of the GPU one."""
    module._kopt_runtime.require_cuda = False
    module._kopt_kernel = module._kopt_runtime.load_so(so)
    return module._kopt_kernel


def test_forward_path_passes_scalars_and_fills_outputs(tmp_path):
    m = import_file(export(data("t_scalars.py"), data("noop.cu"), tmp_path / "a"))
    on_host(m, host_kernel(tmp_path, "HOST_SCALARS"))
    ref, new = m.Model(), m.ModelNew()
    x = torch.randn(4, 8)
    for args in [(x, 0.5, 3, True), (x, -1.25, 0, False), (torch.randn(3, 5), 2.0, -4, True), (x.t(), 0.5, 3, True),
                 (x, 0.5, 3, True)]:
        got = new(*args)
        assert got.shape == ref(*args).shape and got.is_contiguous()
        assert torch.allclose(got, ref(*args), atol=1e-6), args[1:]
    assert new(x, alpha=0.5, shift=1, negate=False).sub(ref(x, 0.5, 1, False)).abs().max() < 1e-6


def test_forward_path_passes_parameters_and_reruns_init_when_they_change(tmp_path):
    m = import_file(export(data("t_linear.py"), data("noop.cu"), tmp_path / "a"))
    kernel = on_host(m, host_kernel(tmp_path, "HOST_LINEAR"))
    init_calls = kernel._lib.init_calls
    init = [32, 48, 0.5]
    ref, new = seeded(m.Model, init), seeded(m.ModelNew, init)
    x = torch.randn(8, 32)
    assert torch.allclose(new(x), ref(x), atol=1e-5)
    assert init_calls() == 1
    assert torch.allclose(new(x + 1), ref(x + 1), atol=1e-5)  # same signature: only pointers change
    assert init_calls() == 1
    with torch.no_grad():  # an in-place update: kopt_init's copy of the bias is stale
        new.linear.bias.add_(1.0)
        ref.linear.bias.add_(1.0)
    assert torch.allclose(new(x), ref(x), atol=1e-5)
    assert init_calls() == 2
    other = seeded(m.ModelNew, init)  # another model using the same kernel
    assert torch.allclose(other(x), seeded(m.Model, init)(x), atol=1e-5)
    assert torch.allclose(new(x), ref(x), atol=1e-5)
    assert init_calls() == 4


def test_output_shapes_fall_back_to_one_reference_call(tmp_path):
    new = import_file(export(data("t_meta_fails.py"), data("noop.cu"), tmp_path / "a"))
    model = seeded(new.ModelNew, [])
    x = torch.randn(6, 10)
    specs, _, how = new.kopt_output_specs(model, x)
    assert (specs, how) == ([((6, 10), torch.float32)], "reference")
    assert new.kopt_output_specs(model, x)[2] == "reference"  # cached per signature
    assert len(new._kopt_state(model).specs) == 1
    new.kopt_output_specs(model, torch.randn(2, 3))
    assert len(new._kopt_state(model).specs) == 2


def test_reference_call_restores_random_state_and_buffers(tmp_path, monkeypatch):
    monkeypatch.setenv("KOPT_EXPORT_SHAPES", "reference")
    drop = import_file(export(data("t_dropout.py"), data("noop.cu"), tmp_path / "a"))
    model = seeded(drop.ModelNew, [])
    x = torch.randn(6, 10)
    state = torch.get_rng_state()
    assert drop.kopt_output_specs(model, x)[2] == "reference"
    assert torch.equal(state, torch.get_rng_state())

    conv = import_file(export(data("t_conv_bn.py"), data("noop.cu"), tmp_path / "b"))
    model = seeded(conv.ModelNew, [3, 8, 3])
    before = [b.clone() for b in model.buffers()]
    specs, _, how = conv.kopt_output_specs(model, torch.randn(2, 3, 9, 9))
    assert (specs, how) == ([((2, 8, 7, 7), torch.float32)], "reference")
    assert all(torch.equal(a, b) for a, b in zip(before, model.buffers()))


def test_reference_answers_are_poisoned_but_inputs_never(tmp_path):
    m = import_file(export(data("t_elementwise.py"), data("noop.cu"), tmp_path / "a"))
    x = torch.randn(3, 4)
    answer, view_of_input, ints = x * 2, x[1:], torch.arange(5)
    m._kopt_poison_answers([answer, view_of_input, ints], [x])
    assert torch.isnan(answer).all() and not torch.isnan(x).any()
    assert (ints == torch.iinfo(torch.int64).min).all()


def test_compile_errors_are_clear(tmp_path, monkeypatch, cache):
    broken = tmp_path / "broken.cu"
    broken.write_text('#include <kopt/abi.h>\nextern "C" int kopt_forward(const kopt_tensor* in) { return oops; }\n')
    m = import_file(export(data("t_elementwise.py"), str(broken), tmp_path / "a"))
    monkeypatch.setenv("KOPT_EXPORT_CACHE", cache)
    monkeypatch.setenv("KOPT_NVCC", str(tmp_path / "no-such-nvcc"))
    with pytest.raises(m._kopt_runtime.CompileError, match="no-such-nvcc"):
        m.kopt_build()
    if not have_nvcc():
        return
    monkeypatch.delenv("KOPT_NVCC")
    with pytest.raises(m._kopt_runtime.CompileError) as e:
        m.kopt_build()
    assert "nvcc failed" in str(e.value) and "candidate.cu(2)" in e.value.log and "oops" in e.value.log


def test_arch_checks_and_retargeting(tmp_path, monkeypatch):
    m = import_file(export(data("t_elementwise.py"), data("noop.cu"), tmp_path / "a"))
    rt = m._kopt_runtime
    assert rt.runs_on("sm_90", 9, 0) and not rt.runs_on("sm_90", 10, 0) and not rt.runs_on("sm_90", 8, 9)
    assert rt.runs_on("sm_80", 8, 6) and not rt.runs_on("sm_86", 8, 0)
    assert rt.runs_on("sm_90a", 9, 0) and not rt.runs_on("sm_100a", 10, 3) and rt.runs_on("sm_100", 10, 3)
    assert rt.target_arch() == "sm_90" and rt.recipe_for("sm_90") == m._KOPT_RECIPE
    monkeypatch.setenv("KOPT_EXPORT_ARCH", "sm_100a")
    assert rt.target_arch() == "sm_100a"
    assert "-gencode=arch=compute_100a,code=sm_100a" in rt.recipe_for(rt.target_arch())
    assert "-gencode=arch=compute_90,code=sm_90" not in rt.recipe_for(rt.target_arch())


def test_an_unwritable_cache_falls_back_to_the_temp_folder(tmp_path, monkeypatch):
    # A read-only home (or kopt's own sandbox, which confines writes to its
    # scratch and points TMPDIR there) must not stop the exported kernel.
    if not have_nvcc():
        pytest.skip("needs nvcc")
    m = import_file(export(data("t_elementwise.py"), data("noop.cu"), tmp_path / "a"))
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would go\n")
    monkeypatch.delenv("KOPT_EXPORT_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    so = m.kopt_build()
    assert so.startswith(str(tmp_path / "tmp" / "kopt-export-")) and os.path.isfile(so)
    assert m.kopt_build() == so  # found again, not rebuilt
    # Named explicitly, an unwritable folder is an error that says what to do.
    monkeypatch.setenv("KOPT_EXPORT_CACHE", str(blocked / "sub"))
    with pytest.raises(m._kopt_runtime.CompileError, match="set KOPT_EXPORT_CACHE"):
        m.kopt_build()
