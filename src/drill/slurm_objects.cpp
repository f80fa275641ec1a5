#include "drill/slurm_objects.h"

#include <algorithm>

#include "core/strings.h"
#include "sched/slurm_reservation.h"
#include "sched/scontrol_fields.h"

namespace cmax::drill {
namespace {

Result<std::vector<std::string>> node_list(const std::string& value, std::string_view what) {
  if (value.empty() || value == "(null)") return std::vector<std::string>{};
  auto names = sched::expand_hostlist(value);
  if (!names) return fail("{}: {}", what, names.error().message);
  return names;
}

}  // namespace

bool Partition::contains(std::string_view node) const {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

bool Job::contains(std::string_view node) const {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

Result<Partition> parse_scontrol_partition(std::string_view text) {
  auto line = sched::single_scontrol_line(text, "partition");
  if (!line) return Unexpected<Error>{line.error()};
  if (line->starts_with("Partition ") && line->ends_with(" not found"))
    return fail("{}: check the name (scontrol show partition)", core::clip(*line, 120));
  if (!line->starts_with("PartitionName="))
    return fail("not a partition line (no PartitionName= first): \"{}\"", core::clip(*line, 80));
  std::vector<sched::ScontrolField> fields;
  sched::split_scontrol_fields(*line, fields);
  Partition p;
  p.name = fields[0].value;
  if (p.name.empty()) return fail("partition line with an empty PartitionName=");
  const std::string* nodes = sched::find_scontrol_field(fields, "Nodes");
  if (nodes == nullptr)
    return fail("partition {}: no Nodes= field (truncated output?): \"{}\"", p.name, core::clip(*line, 80));
  auto names = node_list(*nodes, "partition " + p.name + ": Nodes=");
  if (!names) return Unexpected<Error>{names.error()};
  p.nodes = std::move(*names);
  if (const std::string* state = sched::find_scontrol_field(fields, "State")) p.state = *state;
  return p;
}

Result<Job> parse_scontrol_job(std::string_view text) {
  auto line = sched::single_scontrol_line(text, "job (an array or heterogeneous job prints several)");
  if (!line) return Unexpected<Error>{line.error()};
  if (line->find("Invalid job id") != std::string_view::npos)
    return fail("{}: the job ended long enough ago that slurmctld forgot it, or never existed",
                core::clip(*line, 120));
  if (!line->starts_with("JobId="))
    return fail("not a job line (no JobId= first): \"{}\"", core::clip(*line, 80));
  std::vector<sched::ScontrolField> fields;
  sched::split_scontrol_fields(*line, fields);
  Job j;
  j.id = fields[0].value;
  if (j.id.empty()) return fail("job line with an empty JobId=");
  const std::string* state = sched::find_scontrol_field(fields, "JobState");
  if (state == nullptr || state->empty())
    return fail("job {}: no JobState= field (truncated output?): \"{}\"", j.id, core::clip(*line, 80));
  j.state = *state;
  if (const std::string* nodes = sched::find_scontrol_field(fields, "NodeList")) {
    auto names = node_list(*nodes, "job " + j.id + ": NodeList=");
    if (!names) return Unexpected<Error>{names.error()};
    j.nodes = std::move(*names);
  }
  if (const std::string* restarts = sched::find_scontrol_field(fields, "Restarts")) {
    auto n = core::parse_uint(*restarts);
    if (!n || *n > 1000000) return fail("job {}: Restarts=\"{}\" is not a count", j.id, core::clip(*restarts, 30));
    j.restarts = static_cast<int>(*n);
  }
  if (const std::string* reason = sched::find_scontrol_field(fields, "Reason")) j.reason = *reason;
  return j;
}

}  // namespace cmax::drill
