// ExportCandidate: the files it writes, how a hybrid's kopt imports are
// replaced, and its errors. Generated Python is checked by the real Python.
#include "report/export.h"

#include <algorithm>
#include <cstdlib>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/subprocess.h"
#include "plan/planner.h"
#include "testing/paths.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

const char kTask[] =
    "import torch\n"
    "import torch.nn as nn\n\n\n"
    "class Model(nn.Module):\n"
    "    def __init__(self, n: int):\n"
    "        super().__init__()\n"
    "        self.scale = nn.Parameter(torch.ones(n))\n\n"
    "    def forward(self, x):\n"
    "        return torch.relu(x) * self.scale\n\n\n"
    "def get_inputs():\n"
    "    return [torch.randn(4, 8)]\n\n\n"
    "def get_init_inputs():\n"
    "    return [8]\n";

const char kCuda[] =
    "#include <kopt/abi.h>\n"
    "extern \"C\" int kopt_forward(const kopt_tensor* in, int n_in, kopt_tensor* out, int n_out,\n"
    "                            kopt_stream stream) { return 0; }\n";

std::string Python() {
  const char* env = std::getenv("KOPT_PYTHON");
  return env && *env ? env : "python3";
}

// Python compiles the file (syntax only; nothing runs).
void ExpectCompiles(const fs::path& file) {
  ProcessResult p = RunProcess(
      {Python(), "-c", "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')",
       file.string()});
  EXPECT_TRUE(p.ok()) << file << "\n" << p.out << p.err;
}

ExportRequest Request(const std::string& label, CandidateKind kind, const std::string& source,
                      const std::string& name) {
  ExportRequest r;
  r.task_path = "/tasks/level1/99_scale_relu.py";
  r.task_source = kTask;
  r.candidate.kind = kind;
  r.candidate.source = source;
  r.candidate.name = name;
  BuilderOptions b;
  b.arch = "sm_90";
  r.recipe = ExportRecipe(b, r.candidate);
  r.arch = "sm_90";
  r.abi_header = ReadTextFile(testing::SourceDir() / "include/kopt/abi.h");
  r.out_dir = testing::ScratchDir(label) / "out";
  return r;
}

// The message of the kopt::Error `fn` throws ("" when it throws none).
template <class F>
std::string ErrorOf(F fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool OneSentence(const std::string& m) {
  return !m.empty() && m.back() == '.' && m.find('\n') == std::string::npos;
}

TEST(Export, RecipeIsTheBuildersWithoutTheIncludeFolder) {
  BuilderOptions b;
  b.arch = "sm_90a";
  b.include_dir = "/opt/kopt/include";
  Candidate blas{CandidateKind::kCuda, {}, "#include <cublas_v2.h>\nint kopt_forward();\n", "g.cu"};
  std::vector<std::string> recipe = ExportRecipe(b, blas, {"-DTILE=64"});
  std::vector<std::string> built = NvccFlags(b, {blas.source, blas.name, {"-DTILE=64"}});
  built.erase(std::find(built.begin(), built.end(), "-I/opt/kopt/include"));
  EXPECT_EQ(recipe, built);
  EXPECT_NE(std::find(recipe.begin(), recipe.end(), "-lcublas"), recipe.end());
  EXPECT_NE(std::find(recipe.begin(), recipe.end(), "-gencode=arch=compute_90a,code=sm_90a"),
            recipe.end());
}

TEST(Export, CudaCandidateLayout) {
  ExportRequest r = Request("export-cuda", CandidateKind::kCuda, kCuda, "scale_relu.cu");
  r.provenance = Json{{"task", "99_scale_relu"}, {"run", "run-7"}, {"speedup_vs_eager", 2.5}};
  ExportedFiles f = ExportCandidate(r);
  EXPECT_EQ(f.cu, r.out_dir / "scale_relu.cu");
  EXPECT_EQ(f.header, r.out_dir / "kopt/abi.h");
  EXPECT_EQ(f.modelnew, r.out_dir / "scale_relu_modelnew.py");
  EXPECT_EQ(f.readme, r.out_dir / "README.md");
  EXPECT_EQ(ReadTextFile(f.cu), kCuda);
  EXPECT_EQ(ReadTextFile(f.header), r.abi_header);

  std::string py = ReadTextFile(f.modelnew);
  size_t task_at = py.find(kTask);
  ASSERT_NE(task_at, std::string::npos) << "the task's source is embedded unchanged";
  EXPECT_GT(py.find("class ModelNew(Model):"), task_at);
  EXPECT_NE(py.find("_KOPT_RECIPE = ['-std=c++17', '-O3', '-lineinfo'"), std::string::npos);
  EXPECT_NE(py.find("'-gencode=arch=compute_90,code=sm_90'"), std::string::npos);
  EXPECT_NE(py.find("_KOPT_ARCH = 'sm_90'"), std::string::npos);
  EXPECT_NE(py.find("#   run: run-7\n"), std::string::npos);
  EXPECT_EQ(py.find("import kopt\n"), std::string::npos);
  ExpectCompiles(f.modelnew);

  std::string readme = ReadTextFile(f.readme);
  EXPECT_NE(readme.find("- speedup_vs_eager: 2.5x"), std::string::npos) << readme;
  EXPECT_NE(readme.find("nvcc -std=c++17 -O3 -lineinfo -Xcompiler -fPIC -shared -Xptxas -v "
                        "-gencode=arch=compute_90,code=sm_90 -I. -o scale_relu.so scale_relu.cu"),
            std::string::npos)
      << readme;
}

TEST(Export, ReadmeListsTheSignatureWhenKnownAndSaysWhenNotVerified) {
  ExportRequest r = Request("export-signature", CandidateKind::kCuda, kCuda, "");
  r.inputs = {{"x", "input", "float32", {4, 8}, {8, 1}}, {"scale", "param", "float32", {8}, {1}}};
  r.outputs = {{"out0", "output", "float32", {4, 8}, {8, 1}}};
  ExportedFiles f = ExportCandidate(r);
  EXPECT_EQ(f.cu.filename(), "99_scale_relu.cu");  // no candidate name: the task's
  std::string readme = ReadTextFile(f.readme);
  EXPECT_NE(readme.find("| 1 | param | scale | float32 | (8) |"), std::string::npos) << readme;
  EXPECT_NE(readme.find("| 0 | output | out0 | float32 | (4, 8) |"), std::string::npos) << readme;
  EXPECT_NE(readme.find("Not by this export"), std::string::npos) << readme;
  EXPECT_NE(ReadTextFile(f.modelnew).find("# kopt export did not verify it"), std::string::npos);
}

TEST(Export, HybridWithoutKoptIsCopiedUnchanged) {
  const std::string src =
      "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
      "    def forward(self, x):\n        return x.clamp_min(0)\n";
  ExportRequest r = Request("export-hybrid-plain", CandidateKind::kHybrid, src, "relu_new.py");
  ExportedFiles f = ExportCandidate(r);
  EXPECT_FALSE(f.embedded_loader);
  EXPECT_TRUE(f.cu.empty());
  EXPECT_FALSE(fs::exists(r.out_dir / "kopt"));
  EXPECT_EQ(ReadTextFile(f.modelnew), src);
  EXPECT_NE(ReadTextFile(f.readme).find("unchanged"), std::string::npos);
}

TEST(Export, HybridKoptImportsBindTheEmbeddedLoader) {
  const std::string src =
      "\"\"\"A hybrid.\n\n"
      "import kopt   (in the docstring: left alone)\n"
      "\"\"\"\n"
      "from __future__ import annotations\n"
      "import torch, kopt as k  # two at once\n"
      "from kopt import (load_cuda,\n"
      "                  CompileError as CE)\n"
      "import torch.nn as nn\n"
      "SRC = r'''\n"
      "import kopt\n"
      "'''\n"
      "try:\n"
      "    import kopt\n"
      "except ImportError:\n"
      "    kopt = None\n"
      "_k = kopt.load_cuda(SRC) if kopt else k.load_so('x.so')\n\n\n"
      "class ModelNew(nn.Module):\n"
      "    def forward(self, x):\n        return x\n";
  ExportRequest r = Request("export-hybrid-kopt", CandidateKind::kHybrid, src, "h.py");
  ExportedFiles f = ExportCandidate(r);
  EXPECT_TRUE(f.embedded_loader);
  std::string py = ReadTextFile(f.modelnew);
  // The loader goes after the docstring and the __future__ import.
  size_t future = py.find("from __future__ import annotations\n");
  size_t loader = py.find("def _kopt_make_runtime(");
  ASSERT_NE(future, std::string::npos);
  EXPECT_EQ(py.find("\"\"\"A hybrid."), 0u);
  EXPECT_GT(loader, future);
  EXPECT_NE(
      py.find(
          "import torch; k = _kopt_runtime  # kopt export: was `import torch, kopt as k  # two at "
          "once`\n"),
      std::string::npos)
      << py;
  EXPECT_NE(
      py.find(
          "load_cuda = _kopt_runtime.load_cuda; CE = _kopt_runtime.CompileError  # kopt export"),
      std::string::npos);
  EXPECT_NE(py.find("\n    kopt = _kopt_runtime  # kopt export: was `import kopt`\n"),
            std::string::npos);
  EXPECT_NE(py.find("import kopt   (in the docstring: left alone)"), std::string::npos);
  EXPECT_NE(py.find("SRC = r'''\nimport kopt\n'''"), std::string::npos);
  // Every line of the candidate is still there, in order, so line numbers in
  // tracebacks are the candidate's own plus a fixed offset.
  size_t candidate_at = py.find("# The candidate, unchanged but for its kopt imports.\n");
  ASSERT_NE(candidate_at, std::string::npos);
  std::string tail = py.substr(py.find('\n', candidate_at) + 1);
  EXPECT_EQ(std::count(tail.begin(), tail.end(), '\n') +
                std::count(src.begin(), src.begin() + src.find("import torch, kopt"), '\n'),
            std::count(src.begin(), src.end(), '\n'));
  ExpectCompiles(f.modelnew);
}

// The planner's library call with a fused tail (src/plan/hybrid.h) exports
// like any hybrid: its `import kopt as _kopt_lib` binds the embedded loader.
TEST(Export, APlannedLibraryWithFusedTailExports) {
  TaskBundle b;
  b.graph =
      ReadJsonFile(testing::SourceDir() / "tests/data/graphs/level2_02_conv2d_relu_biasadd.json");
  PlanInputs in;
  in.bundle = &b;
  in.task_stem = "02_conv2d_relu_biasadd";
  in.task_source = ReadTextFile(testing::SourceDir() / "tasks/level2/02_conv2d_relu_biasadd.py");
  // The library+fused hybrid, and the channels-last replay with its tail.
  for (const char* space : {"library+fused", "library"}) {
    std::optional<PlanOption> hybrid;
    for (const PlanOption& o : MakePlan(in).options)
      if (o.space == space) hybrid = o;
    ASSERT_TRUE(hybrid) << space;
    ExportRequest r =
        Request(std::string("export-planned-") + (hybrid->space == "library" ? "replay" : "hybrid"),
                CandidateKind::kHybrid, hybrid->candidate.source, hybrid->candidate.name);
    r.task_source = in.task_source;
    ExportedFiles f = ExportCandidate(r);
    EXPECT_TRUE(f.embedded_loader) << space;
    const std::string py = ReadTextFile(f.modelnew);
    EXPECT_NE(py.find("_kopt_lib = _kopt_runtime  # kopt export: was `import kopt as _kopt_lib`"),
              std::string::npos)
        << py.substr(0, 400);
    EXPECT_NE(py.find("class ModelNew(Model):"), std::string::npos);
    ExpectCompiles(f.modelnew);
  }
}

TEST(Export, HybridImportsTheLoaderCannotCarryAreOneSentenceErrors) {
  const std::string head = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n";
  for (const auto& [line, words] : std::vector<std::pair<std::string, std::string>>{
           {"import kopt.tasks\n", "imports kopt.tasks"},
           {"from kopt.tasks import load_task\n", "imports from kopt.tasks"},
           {"from kopt import include_dir\n", "imports `include_dir` from kopt"},
           {"import kopt\nkopt.default_arch()\n", "uses kopt.default_arch"},
           {"x = 1; import kopt\n", "imports kopt in a form"},
           {"import importlib\nm = importlib.import_module('kopt')\n", "imports kopt in a form"},
           {"from kopt import (load_cuda,\n", "unclosed"},
       }) {
    ExportRequest r = Request("export-hybrid-bad", CandidateKind::kHybrid, head + line, "bad.py");
    std::string m = ErrorOf([&] { ExportCandidate(r); });
    EXPECT_NE(m.find(words), std::string::npos) << line << " -> " << m;
    EXPECT_NE(m.find("bad.py line "), std::string::npos) << m;
    EXPECT_TRUE(OneSentence(m)) << m;
    EXPECT_FALSE(fs::exists(r.out_dir / "bad_modelnew.py"));
  }
}

TEST(Export, BadRequestsAreOneSentenceErrors) {
  ExportRequest no_model = Request("export-err", CandidateKind::kCuda, kCuda, "k.cu");
  no_model.task_source = "def get_inputs():\n    return []\n";
  ExportRequest no_forward = Request("export-err", CandidateKind::kCuda, "int main() {}\n", "k.cu");
  ExportRequest no_modelnew =
      Request("export-err", CandidateKind::kHybrid, "class Model:\n    pass\n", "k.py");
  ExportRequest no_recipe = Request("export-err", CandidateKind::kCuda, kCuda, "k.cu");
  no_recipe.recipe.clear();
  ExportRequest bad_arch = Request("export-err", CandidateKind::kCuda, kCuda, "k.cu");
  bad_arch.arch = "hopper";
  ExportRequest not_utf8 =
      Request("export-err", CandidateKind::kCuda, std::string(kCuda) + "// \xff\xfe\n", "k.cu");
  ExportRequest file_out = Request("export-err", CandidateKind::kCuda, kCuda, "k.cu");
  WriteTextFileAtomic(file_out.out_dir, "not a folder");
  for (const auto& [request, words] : std::vector<std::pair<ExportRequest, std::string>>{
           {no_model, "defines no top-level `class Model`"},
           {no_forward, "defines no kopt_forward"},
           {no_modelnew, "defines no top-level `class ModelNew`"},
           {no_recipe, "no nvcc recipe"},
           {bad_arch, "not an SM architecture"},
           {not_utf8, "not UTF-8"},
           {file_out, "is not a folder"},
       }) {
    std::string m = ErrorOf([&] { ExportCandidate(request); });
    EXPECT_NE(m.find(words), std::string::npos) << words << " -> " << m;
    EXPECT_TRUE(OneSentence(m)) << m;
  }
}

// Each literal, read back by Python, is exactly the text.
TEST(Export, PythonStringLiteralsRoundTrip) {
  std::vector<std::string> texts = {
      "",
      "plain",
      "-DNAME=\"x\"",
      "line\nbreak \\n kept as backslash-n",
      "ends in a backslash \\",
      "has ''' triple single quotes",
      "has ''' and \"\"\" both",
      "ends with a quote'",
      "crlf\r\nline",
      std::string("nul\0byte", 8),
      "unicode: \xc3\xa9\xe2\x86\x92",
  };
  fs::path dir = testing::ScratchDir("export-literals");
  std::string py = "import sys\nvalues = [\n";
  for (const auto& t : texts) py += "    " + PythonStringLiteral(t) + ",\n";
  py +=
      "]\nexpected = open(sys.argv[1], 'rb').read().split(b'\\x01SEP\\x01')\n"
      "for i, (v, e) in enumerate(zip(values, expected)):\n"
      "    assert v.encode() == e, (i, v, e)\n"
      "assert len(values) == len(expected)\nprint('ok')\n";
  std::string joined;
  for (size_t i = 0; i < texts.size(); ++i) joined += (i ? "\x01SEP\x01" : "") + texts[i];
  WriteTextFileAtomic(dir / "literals.py", py);
  WriteTextFileAtomic(dir / "expected.bin", joined);
  ProcessResult p =
      RunProcess({Python(), (dir / "literals.py").string(), (dir / "expected.bin").string()});
  EXPECT_TRUE(p.ok()) << p.out << p.err;
  EXPECT_EQ(p.out, "ok\n");
  EXPECT_EQ(PythonStringLiteral("-O3"), "'-O3'");
}

}  // namespace
}  // namespace kopt
