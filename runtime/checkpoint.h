#pragma once
// Where a restarted run resumes: the newest complete checkpoint in the checkpoint
// folder (KTRAIN_CHECKPOINT_DIR, the volume marked `checkpoint: true`), which the
// launcher exports to the workers as KTRAIN_CHECKPOINT_LATEST.

#include <cstdint>
#include <optional>
#include <string>

namespace ktrain::launch {

/// A checkpoint found in the folder.
struct Checkpoint {
  std::string path;             ///< absolute: the folder's path and the entry's name
  std::int64_t mtime_unix = 0;  ///< when it was last written (seconds since the epoch)
};

/// The newest complete checkpoint in `dir`, or nullopt when there is none (or no
/// such folder). A file named `latest` naming an entry of the folder (DeepSpeed's
/// convention; one line, surrounding space ignored) wins. Otherwise the entry last
/// written, among those whose names do not begin with '.' and do not end in .tmp,
/// .partial or .incomplete (where a checkpoint is written before it is renamed into
/// place), and are not `latest` itself; a tie goes to the greater name.
std::optional<Checkpoint> latest_checkpoint(const std::string& dir);

}  // namespace ktrain::launch
