#pragma once
// NVIDIA's decode of the registers some Xid lines print, as data: the Xid 144-150 (NVLink5) decode
// sheet (data/xid_nvlink_decode.csv: IntrInfo mask and ErrorStatus -> subcode, severity, action,
// per driver generation V1 = before R575, V2 = R575 on) and the Xid 74 register bits
// (data/xid74_decode.csv). Both from NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors,
// the catalog spreadsheet of 2025-09-30); sources in docs/signals-config.md. Immutable, pure.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "signals/signal.h"

namespace cmax::signals {

/// What a decode says: the action on cmax's scale and the reason, naming the sheet row.
struct XidDecoded {
  Action action = Action::monitor;
  std::string reason;
};

class XidDecoder {
 public:
  /// The embedded sheets. Fails only if the embedded CSVs are damaged.
  static Result<XidDecoder> builtin();
  static Result<XidDecoder> from_csv(std::string_view nvlink_csv, std::string_view xid74_csv);

  /// Xid 144-150 and 74 lines with their registers read; nullopt for any other line, or when no
  /// row applies (the catalog row and the Fatal/Nonfatal word decide then).
  std::optional<XidDecoded> decode(const Signal& s) const;

  std::size_t nvlink_rows() const { return nvlink_.size(); }
  std::size_t xid74_rows() const { return xid74_.size(); }

 private:
  struct NvlinkRow {
    int xid = 0;
    int version = 1;          ///< 1: before R575, 2: R575 on
    std::string subcode;
    std::uint32_t care = 0;   ///< bits the mask fixes
    std::uint32_t value = 0;  ///< their values
    std::vector<std::uint32_t> error_status;  ///< any of these ("0x0/0xFFFFFFFF"); empty: any value
    std::string severity, immediate, investigatory;
    int sheet_row = 0;
  };
  struct Xid74Row {
    int reg = 0;
    std::uint32_t mask = 0;
    Action action = Action::monitor;
    std::string meaning;
  };
  std::optional<XidDecoded> decode_nvlink(const Signal& s) const;
  std::optional<XidDecoded> decode_xid74(const Signal& s) const;
  std::vector<NvlinkRow> nvlink_;
  std::vector<Xid74Row> xid74_;
};

}  // namespace cmax::signals
