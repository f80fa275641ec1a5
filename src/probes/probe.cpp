#include "probes/probe.h"

#include "signals/classify.h"

namespace cmax::probes {

signals::Signal signal_of(const Finding& f) {
  signals::Signal sig;
  sig.kind = f.kind;
  sig.code = f.code;
  sig.fatal = f.fatal;
  sig.subject = f.subject;
  sig.device = f.kind == signals::Kind::xid ? signals::pci_without_function(f.device) : std::string_view(f.device);
  return sig;
}

}  // namespace cmax::probes
