// nvidia-smi topo -m parsing on the real samples in tests/golden/gpu_tools (see its README.md).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "support/golden.h"
#include "gputools/topo.h"

namespace cmax::gputools {
namespace {

std::string golden(std::string_view name) { return test::read_golden("gpu_tools", name); }

const TopoRow* row(const TopoMatrix& m, const std::string& label) {
  for (const auto& r : m.rows)
    if (r.label == label) return &r;
  return nullptr;
}

TEST(Topo, B300EightGpusAllNv18NineNics) {
  // The header keeps the "[4m" / "[0m" residue of the ANSI underline, without the ESC bytes.
  auto m = parse_topo_matrix(golden("nvidia-smi-topo-m_sglang-26039-b300x8-9nic.txt"));
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->errors.empty());
  ASSERT_EQ(m->gpus().size(), 8u);
  ASSERT_EQ(m->nics().size(), 9u);
  EXPECT_EQ(m->labels.front(), "GPU0");
  EXPECT_TRUE(m->has_cpu_affinity && m->has_numa_affinity && m->has_gpu_numa_id);
  ASSERT_EQ(m->rows.size(), 17u);
  for (const auto& a : m->gpus())
    for (const auto& b : m->gpus()) {
      auto l = m->link(a, b);
      ASSERT_TRUE(l);
      if (a == b) EXPECT_EQ(l->kind, LinkKind::self);
      else EXPECT_TRUE(l->kind == LinkKind::nvlink && l->nvlinks == 18) << a << " " << b;
    }
  EXPECT_EQ(m->link("GPU0", "NIC0")->kind, LinkKind::pxb);
  EXPECT_EQ(m->link("GPU4", "NIC0")->kind, LinkKind::sys);
  EXPECT_EQ(row(*m, "GPU0")->cpu_affinity, "0-63,128-191");
  EXPECT_EQ(row(*m, "GPU0")->numa_affinity, "0");
  EXPECT_EQ(row(*m, "GPU0")->gpu_numa_id, "N/A");
  EXPECT_EQ(row(*m, "GPU7")->numa_affinity, "1");
  EXPECT_EQ(row(*m, "NIC8")->cells.size(), 17u);
  EXPECT_TRUE(row(*m, "NIC8")->cpu_affinity.empty());
  ASSERT_EQ(m->nic_legend.size(), 9u);
  EXPECT_EQ(m->nic_device("NIC0"), "mlx5_10");
  EXPECT_EQ(m->nic_device("NIC8"), "mlx5_bond_0");
}

TEST(Topo, Rtx4090PcieOnlyAllSys) {
  // NIC rows have no trailing cells and the last row ends in " X" with no trailing space.
  auto m = parse_topo_matrix(golden("nvidia-smi-topo-m_go-gpuallocator-17-rtx4090x8-pcie.txt"));
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_TRUE(m->errors.empty());
  ASSERT_EQ(m->gpus().size(), 8u);
  ASSERT_EQ(m->nics().size(), 2u);
  for (const auto& a : m->gpus())
    for (const auto& b : m->gpus()) {
      if (a != b) EXPECT_EQ(m->link(a, b)->kind, LinkKind::sys);
    }
  EXPECT_EQ(m->link("GPU6", "NIC0")->kind, LinkKind::phb);
  EXPECT_EQ(m->link("NIC1", "NIC1")->kind, LinkKind::self);
  EXPECT_EQ(m->link("NIC0", "NIC1")->kind, LinkKind::pix);
  EXPECT_EQ(row(*m, "GPU4")->cpu_affinity, "56-111,168-223");
  EXPECT_TRUE(m->nic_legend.empty());
  EXPECT_EQ(m->nic_device("NIC1"), "NIC1");
}

TEST(Topo, H100SingleGpuWithRealEscBytes) {
  const auto text = golden("nvidia-smi-topo-m_utkuozdemir-h100-1gpu.txt");
  ASSERT_NE(text.find('\x1b'), std::string::npos);
  auto m = parse_topo_matrix(text);
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ(m->labels, std::vector<std::string>{"GPU0"});
  ASSERT_EQ(m->rows.size(), 1u);
  EXPECT_EQ(m->rows[0].cpu_affinity, "0-19");
  EXPECT_EQ(m->rows[0].gpu_numa_id, "N/A");
  EXPECT_TRUE(m->errors.empty());
}

TEST(Topo, MultiSpaceSeparatedAndCells) {
  auto m = parse_topo_matrix(
      "        GPU0    GPU1    CPU Affinity    NUMA Affinity\n"
      "GPU0     X      NV12    0-31            0\n"
      "GPU1    NV12     X      0-31            0\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->link("GPU0", "GPU1")->nvlinks, 12);
  EXPECT_EQ(m->rows[1].numa_affinity, "0");
  EXPECT_EQ(parse_topo_link("SOC").kind, LinkKind::sys);
  EXPECT_EQ(parse_topo_link("NVx").kind, LinkKind::unknown);
  EXPECT_EQ(parse_topo_link("NV").kind, LinkKind::unknown);
}

TEST(Topo, TruncatedAndMalformedInputNeverCrash) {
  const auto text = golden("nvidia-smi-topo-m_sglang-26039-b300x8-9nic.txt");
  for (std::size_t n = 0; n < text.size(); n += 37) {
    auto m = parse_topo_matrix(std::string_view(text).substr(0, n));
    if (m) {
      for (const auto& r : m->rows) EXPECT_LE(r.cells.size(), m->labels.size());
    }
  }
  EXPECT_FALSE(parse_topo_matrix(""));
  EXPECT_FALSE(parse_topo_matrix("no topology here\n"));
  auto cut = parse_topo_matrix(text.substr(0, text.find("GPU3\t")));  // rows GPU3.. missing
  ASSERT_TRUE(cut);
  EXPECT_FALSE(cut->link("GPU3", "GPU0"));
  auto junk = parse_topo_matrix("\tGPU0\tGPU1\nGPU0\t X \tNV4\nfoo bar\n");
  ASSERT_TRUE(junk);
  EXPECT_EQ(junk->errors.size(), 1u);
}

}  // namespace
}  // namespace cmax::gputools
