// JSON values and durable JSON files (nlohmann::json underneath).
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

namespace kopt {

using Json = nlohmann::json;

/// `j[key]` when `j` is an object holding a number there, else `fallback`
/// (worker replies are read leniently: a missing statistic is not a crash).
double NumberOr(const Json& j, const char* key, double fallback = 0);

/// Parses a JSON file; throws kopt::Error naming the file on failure.
Json ReadJsonFile(const std::filesystem::path& path);

/// Writes through a temporary file and a rename, so a crash never leaves a
/// half-written record behind.
void WriteJsonFileAtomic(const std::filesystem::path& path, const Json& value,
                         int indent = 2);

/// Reads a whole text file; throws kopt::Error when it cannot.
std::string ReadTextFile(const std::filesystem::path& path);

/// Writes a text file atomically (temporary file, then rename).
void WriteTextFileAtomic(const std::filesystem::path& path,
                         const std::string& text);

}  // namespace kopt
