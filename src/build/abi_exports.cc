#include "build/abi_exports.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "build/builder.h"

namespace kopt {
namespace fs = std::filesystem;
namespace {

constexpr char kForward[] = "kopt_forward";

template <class T>
bool ReadAt(const std::string& data, uint64_t offset, T* out) {
  if (offset > data.size() || data.size() - offset < sizeof(T)) return false;
  std::memcpy(out, data.data() + offset, sizeof(T));
  return true;
}

class AbiCheckingBuilder : public Builder {
 public:
  explicit AbiCheckingBuilder(std::unique_ptr<Builder> inner) : inner_(std::move(inner)) {}

  BuildResult Build(const BuildRequest& request) override { return Check(inner_->Build(request)); }

  std::vector<BuildResult> BuildAll(const std::vector<BuildRequest>& requests) override {
    std::vector<BuildResult> results = inner_->BuildAll(requests);
    for (auto& r : results) r = Check(std::move(r));
    return results;
  }

 private:
  static BuildResult Check(BuildResult r) {
    if (!r.ok) return r;
    std::string why = MissingAbiExport(r.so_path);
    if (why.empty()) return r;
    r.ok = false;
    r.log += "kopt: " + why + "\n";
    return r;
  }

  std::unique_ptr<Builder> inner_;
};

}  // namespace

std::vector<std::string> ExportedSymbols(const fs::path& so, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = so.string() + " " + why;
    return std::vector<std::string>{};
  };
  std::ifstream in(so, std::ios::binary);
  if (!in) return fail("cannot be read");
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Elf64_Ehdr eh;
  if (!ReadAt(data, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
      eh.e_ident[EI_CLASS] != ELFCLASS64)
    return fail("is not an ELF64 shared object");
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) return fail("has unexpected section headers");
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  for (size_t i = 0; i < sections.size(); ++i)
    if (!ReadAt(data, eh.e_shoff + i * sizeof(Elf64_Shdr), &sections[i]))
      return fail("is truncated");
  std::vector<std::string> names;
  for (const auto& sh : sections) {
    if (sh.sh_type != SHT_DYNSYM || sh.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    for (uint64_t off = sh.sh_offset; off + sizeof(Elf64_Sym) <= sh.sh_offset + sh.sh_size;
         off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      if (!ReadAt(data, off, &sym)) return fail("is truncated");
      int bind = ELF64_ST_BIND(sym.st_info);
      if (sym.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK)) continue;
      if (sym.st_name >= strtab.sh_size || strtab.sh_offset + sym.st_name >= data.size()) continue;
      const char* name = data.data() + strtab.sh_offset + sym.st_name;
      size_t max = std::min<uint64_t>(strtab.sh_size - sym.st_name,
                                      data.size() - strtab.sh_offset - sym.st_name);
      names.emplace_back(name, strnlen(name, max));
    }
  }
  return names;
}

std::string MissingAbiExport(const fs::path& so) {
  std::string error;
  std::vector<std::string> names = ExportedSymbols(so, &error);
  if (!error.empty()) return error + ", so it cannot export kopt_forward.";
  std::string mangled;
  for (const auto& n : names) {
    if (n == kForward) return "";
    // Itanium mangling of a free function: _Z12kopt_forward<parameter types>.
    if (n.rfind("_Z12kopt_forward", 0) == 0) mangled = n;
  }
  if (!mangled.empty())
    return "the shared object exports kopt_forward with C++ linkage (as " + mangled +
           "), so it cannot be found by name: define it extern \"C\" (including <kopt/abi.h> "
           "before the definition does that).";
  return "the shared object defines no kopt_forward: a cuda candidate must define the function "
         "declared in include/kopt/abi.h (a declaration, a comment or a string naming it is not "
         "enough).";
}

std::unique_ptr<Builder> WithAbiExportCheck(std::unique_ptr<Builder> inner) {
  return std::make_unique<AbiCheckingBuilder>(std::move(inner));
}

}  // namespace kopt
