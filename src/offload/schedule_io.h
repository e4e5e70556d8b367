// Schedule files: the JSON format of triggered-ops.md section 8 ("fabriclab.schedule/1",
// field names exactly as written there) and Graphviz DOT for viewing.
//
//   write_schedule_json(schedule, "ring8.json");
//   Schedule back = read_schedule_json("ring8.json");   // throws InputError with line:col
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "offload/schedule.h"

namespace fabriclab::offload {

// Counter ids in files are per rank (triggered-ops.md sections 1 and 8: counter 0 of rank 0
// and counter 0 of rank 1 differ). The writer numbers each rank's counters from 0, as a
// NIC would, in the order of their schedule-wide ids, counting only counters an operation
// names; the reader maps each (rank, file id) to a schedule-wide id in (rank, file id)
// order and keeps the file's id as the counter's name for messages. A file whose ids are
// unique across the schedule reads the same way.
// The file as a JSON document (write_schedule_json's text, parsed: for tests and small
// schedules; files are written as a stream).
nlohmann::ordered_json schedule_to_json(const Schedule& s);
// `origin` names the source in error messages (a file name). Read as a stream when
// "format" and "ranks" come before "ops" (as written): each operation is converted as it
// is parsed and its JSON dropped; any field order reads the same schedule, or fails with
// the same first error. `path`, when given, says how this text was read.
enum class ReadPath : std::uint8_t {
  streamed,  // each operation converted as it was parsed
  document,  // held whole: "format" or "ranks" not before "ops", or "layout" after it
};
Schedule schedule_from_json_text(const std::string& text, const std::string& origin, ReadPath* path = nullptr);

// The id the writers give each counter (indexed by schedule-wide id): its rank's counters
// named by operations, numbered from 0 in id order; kNoCounter for counters no op names.
std::vector<CounterId> rank_counter_ids(const Schedule& s);

// The file: its fields, then the operations one per line, then the counters, written as a
// stream (a schedule of millions of operations never becomes a document in memory).
void write_schedule_json(const Schedule& s, std::ostream& out);
void write_schedule_json(const Schedule& s, const std::string& path);
Schedule read_schedule_json(const std::string& path);

// One cluster per rank; solid edges are local dependences, dashed edges carry data to
// an arrival, dotted edges are transport orderings. Nodes show trigger and completion.
void write_schedule_dot(const Schedule& s, std::ostream& out);
void write_schedule_dot(const Schedule& s, const std::string& path);

// Reads a whole file; throws InputError naming it when it cannot be read.
std::string read_text_file(const std::string& path);

// 1-based line and column of a byte offset in `text`.
std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t offset);

}  // namespace fabriclab::offload
