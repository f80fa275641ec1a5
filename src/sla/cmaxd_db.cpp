#include <filesystem>

#include "sla/parse.h"
#include "store/sqlite.h"

namespace cmax::sla {

Result<std::vector<NodeAction>> read_cmaxd_actions(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return fail("open cmaxd event database {}: no such file; give the path cmaxd was started with (--db, default /var/lib/cmax/cmaxd.db)", path);
  auto db = store::Database::open(path);
  if (!db) return Unexpected<Error>{db.error()};
  auto has = db->prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'actions'");
  if (!has) return Unexpected<Error>{has.error()};
  auto row = has->step();
  if (!row) return Unexpected<Error>{row.error()};
  if (!*row) return fail("read cmaxd event database {}: no actions table; is this cmaxd's database?", path);
  auto st = db->prepare(
      "SELECT node, verb, status, reason, t_requested, coalesce(t_done, t_requested) FROM actions ORDER BY "
      "t_requested, id");
  if (!st) return Unexpected<Error>{st.error()};
  std::vector<NodeAction> actions;
  while (true) {
    auto r = st->step();
    if (!r) return Unexpected<Error>{r.error()};
    if (!*r) break;
    actions.push_back(NodeAction{st->column_text(0), st->column_text(1), st->column_text(2), st->column_text(3),
                                 st->column_double(4), st->column_double(5)});
  }
  return actions;
}

Result<EventSet> read_cmaxd_db(const std::string& path) {
  auto actions = read_cmaxd_actions(path);
  if (!actions) return Unexpected<Error>{actions.error()};
  return intervals_from_actions(*actions);
}

}  // namespace cmax::sla
