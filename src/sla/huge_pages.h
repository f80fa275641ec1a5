#pragma once
// Large buffers that are written once, front to back (tens of millions of intervals): in a VM each
// 4 KiB page fault is costly, so their whole 2 MiB pages are offered to transparent huge pages
// before the first write, for one fault per 2 MiB.

#include <cstddef>
#include <vector>

namespace cmax::sla {

/// Advises the kernel to back the whole 2 MiB pages inside [data, data + bytes) with transparent
/// huge pages. A hint: it never fails and does nothing for buffers under 4 MiB. Call it before the
/// memory is first written.
void advise_huge_pages(const void* data, std::size_t bytes);

/// `v.reserve(n)`, then advise_huge_pages over what it allocated.
template <class T>
void reserve_huge(std::vector<T>& v, std::size_t n) {
  const bool fresh = n > v.capacity();
  v.reserve(n);
  if (fresh) advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

}  // namespace cmax::sla
