// `kopt memory`: the knowledge base (long-term memory) from the command line:
// list, show, search, add and export entries.
#include <fmt/format.h>

#include <system_error>

#include "cli/commands.h"
#include "core/error.h"
#include "core/json.h"
#include "core/paths.h"
#include "memory/knowledge.h"
#include "report/table.h"
#include "run/worker_channel.h"

namespace kopt {
namespace {

namespace fs = std::filesystem;

struct MemoryArgs {
  std::string db;         ///< empty: DefaultMemoryPath()
  std::string knowledge;  ///< empty: <repository>/knowledge
  bool json = false;
  std::string id;
  std::vector<std::string> words;
  int limit = 10;
  std::string file;
  std::string out = "memory-export";
};

// The curated folder: --knowledge, else the repository's knowledge/ (empty
// when kopt runs outside its repository: the database alone is used).
fs::path KnowledgeFolder(const MemoryArgs& a) {
  if (!a.knowledge.empty()) return a.knowledge;
  try {
    return FindRepoRoot() / "knowledge";
  } catch (const Error&) {
    fmt::print(stderr,
               "kopt: note: kopt's repository was not found, so curated entries were not reloaded "
               "(set KOPT_ROOT "
               "or pass --knowledge DIR).\n");
    return {};
  }
}

std::unique_ptr<KnowledgeBase> Open(const MemoryArgs& a, const fs::path& folder) {
  fs::path db = a.db.empty() ? DefaultMemoryPath() : fs::path(a.db);
  return OpenKnowledgeBase(db, folder);
}

std::unique_ptr<KnowledgeBase> Open(const MemoryArgs& a) { return Open(a, KnowledgeFolder(a)); }

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return v.empty() ? "any" : s;
}

std::string EntriesTable(const std::vector<KnowledgeEntry>& entries) {
  Table t({"id", "origin", "op classes", "title"});
  t.AlignLeft(0);
  for (const KnowledgeEntry& e : entries)
    t.AddRow({e.id, e.origin == "learned" ? fmt::format("learned {:.2f}x", e.gain) : e.origin,
              Join(e.op_classes), e.title});
  return t.Render();
}

Json EntriesJson(const std::vector<KnowledgeEntry>& entries) {
  Json j = Json::array();
  for (const KnowledgeEntry& e : entries) j.push_back(ToJson(e));
  return j;
}

int RunList(const MemoryArgs& a) {
  auto kb = Open(a);
  std::vector<KnowledgeEntry> entries = kb->List();
  if (a.json)
    fmt::print("{}\n", EntriesJson(entries).dump(2));
  else if (entries.empty())
    fmt::print(
        "The knowledge base {} is empty: add entries to knowledge/ or with `kopt memory add "
        "FILE.md`.\n",
        kb->path().string());
  else
    fmt::print("{}", EntriesTable(entries));
  return 0;
}

int RunShow(const MemoryArgs& a) {
  auto kb = Open(a);
  std::optional<KnowledgeEntry> e = kb->Get(a.id);
  if (!e)
    throw Error(
        fmt::format("There is no knowledge entry '{}' in {}: see `kopt memory list` for the ids.",
                    a.id, kb->path().string()));
  if (a.json)
    fmt::print("{}\n", ToJson(*e).dump(2));
  else
    fmt::print("{}", KnowledgeToMarkdown(*e));
  return 0;
}

int RunSearch(const MemoryArgs& a) {
  std::string text;
  for (const auto& w : a.words) text += (text.empty() ? "" : " ") + w;
  auto kb = Open(a);
  std::vector<KnowledgeEntry> found = kb->Search(text, a.limit);
  if (a.json)
    fmt::print("{}\n", EntriesJson(found).dump(2));
  else if (found.empty())
    fmt::print("Nothing in the knowledge base matches '{}'.\n", text);
  else
    fmt::print("{}", EntriesTable(found));
  return 0;
}

int RunAdd(const MemoryArgs& a) {
  fs::path file = a.file;
  if (file.extension() != ".md")
    throw Error(fmt::format(
        "{} is not a Markdown entry: give a .md file written as knowledge/README.md describes.",
        file.string()));
  std::string id = file.stem().string();
  fs::path folder = KnowledgeFolder(a);
  std::error_code ec;
  if (!folder.empty() && fs::exists(folder / (id + ".md"), ec) &&
      !fs::equivalent(folder / (id + ".md"), file, ec))
    throw Error(fmt::format(
        "The curated entry {} already has the id '{}': edit that file, or rename yours.",
        (folder / (id + ".md")).string(), id));
  KnowledgeEntry e;
  try {
    e = ParseKnowledgeMarkdown(id, ReadTextFile(file));
  } catch (const Error& err) {
    throw Error(fmt::format("{} (in {})", err.what(), file.string()));
  }
  if (e.origin != "curated")
    throw Error(
        fmt::format("{} says origin: {}; entries added by hand are curated: remove that line.",
                    file.string(), e.origin));
  auto kb = Open(a, folder);
  bool replaced = kb->Get(id).has_value();
  kb->Put(e);
  fmt::print("{} '{}' in {}.\n", replaced ? "Replaced" : "Added", id, kb->path().string());
  return 0;
}

int RunExport(const MemoryArgs& a) {
  auto kb = Open(a);
  fs::path out = a.out;
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec)
    throw Error(
        fmt::format("Cannot create the folder {} ({}): pass --out with a folder you can write.",
                    out.string(), ec.message()));
  std::vector<KnowledgeEntry> entries = kb->List();
  int learned = 0;
  for (const KnowledgeEntry& e : entries) {
    WriteTextFileAtomic(out / (e.id + ".md"), KnowledgeToMarkdown(e));
    learned += e.origin == "learned";
  }
  fmt::print("Wrote {} entries ({} learned) to {}.\n", entries.size(), learned, out.string());
  return 0;
}

}  // namespace

void AddMemoryCommand(CLI::App* app, int* exit_code) {
  auto a = std::make_shared<MemoryArgs>();
  CLI::App* cmd = app->add_subcommand("memory",
                                      "The knowledge base the proposers read: curated entries "
                                      "(knowledge/) and wins learned from runs");
  cmd->require_subcommand(1);
  cmd->fallthrough();
  cmd->add_option("--db", a->db,
                  "The knowledge base (default $KOPT_MEMORY, else memory.db in the cache folder)");
  cmd->add_option(
      "--knowledge", a->knowledge,
      "The folder of curated entries to load (default knowledge/ in kopt's repository)");

  CLI::App* list = cmd->add_subcommand("list", "List every entry: id, origin, op classes, title");
  list->add_flag("--json", a->json, "Print JSON instead of a table");
  list->callback([a, exit_code] { *exit_code = RunList(*a); });

  CLI::App* show = cmd->add_subcommand("show", "Print one entry as Markdown");
  show->add_option("id", a->id, "The entry's id (see `kopt memory list`)")->required();
  show->add_flag("--json", a->json, "Print JSON instead of Markdown");
  show->callback([a, exit_code] { *exit_code = RunShow(*a); });

  CLI::App* search =
      cmd->add_subcommand("search", "Full-text search of the entries, best match first");
  search->add_option("text", a->words, "Words to look for (a diagnosis name, an op, a technique)")
      ->required();
  search->add_option("--limit", a->limit, "Show at most this many entries")->capture_default_str();
  search->add_flag("--json", a->json, "Print JSON instead of a table");
  search->callback([a, exit_code] { *exit_code = RunSearch(*a); });

  CLI::App* add = cmd->add_subcommand(
      "add", "Add (or replace) an entry from a Markdown file (knowledge/README.md)");
  add->add_option("file", a->file, "The entry, FILE.md; its name without .md is the id")
      ->required();
  add->callback([a, exit_code] { *exit_code = RunAdd(*a); });

  CLI::App* exp =
      cmd->add_subcommand("export", "Write every entry, learned ones included, as Markdown files");
  exp->add_option("--out", a->out, "The folder to write <id>.md files into")->capture_default_str();
  exp->callback([a, exit_code] { *exit_code = RunExport(*a); });
}

}  // namespace kopt
