// The minimal XML scanner and tree (gputools/xml_scan.h): the constructs nvidia-smi prints, the
// real `nvidia-smi -q -x` samples in tests/golden/gpu_tools, and malformed input that must give
// an error naming the line, never a crash or deep recursion.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/golden.h"
#include "gputools/xml_scan.h"

namespace cmax::gputools {
namespace {

std::string golden(std::string_view name) { return test::read_golden("gpu_tools", name); }

constexpr const char* kSamples[] = {"nvidia-smi-qx_netdata-tesla-p100.xml",
                                    "nvidia-smi-qx_netdata-a100-sxm4-40gb-mig.xml",
                                    "nvidia-smi-qx_telegraf-a100-sxm4-80gb-mig.xml",
                                    "nvidia-smi-qx_telegraf-rtx3090-v13-swpowercap.xml"};

TEST(XmlScan, PullsOpenTextCloseAndSkipsPrologDoctypeComments) {
  XmlScanner s(
      "<?xml version=\"1.0\" ?>\n<!DOCTYPE log SYSTEM \"v12.dtd\" [ <!ENTITY x \"]>\"> ]>\n<!-- c "
      "-->\n"
      "<log><gpu id=\"00000000:07:00.0\" n='2'>a &amp; b</gpu><empty/></log>\n<!-- after -->\n");
  std::vector<std::string> seen;
  while (true) {
    auto ev = s.next();
    ASSERT_TRUE(ev) << ev.error().message;
    if (!*ev) break;
    const auto& e = **ev;
    if (e.kind == XmlEvent::Kind::open) {
      seen.push_back("<" + e.name);
      for (const auto& [k, v] : e.attributes) seen.push_back(k + "=" + v);
    } else if (e.kind == XmlEvent::Kind::close) {
      seen.push_back("/" + e.name);
    } else {
      seen.push_back("'" + e.text + "'");
    }
  }
  const std::vector<std::string> want = {
      "<log", "<gpu", "id=00000000:07:00.0", "n=2", "'a & b'", "/gpu", "<empty", "/empty", "/log"};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(s.depth(), 0u);
}

TEST(XmlScan, DecodesTheFivePredefinedEntitiesAndCharacterReferences) {
  auto root = parse_xml("<a>&lt;&gt;&amp;&quot;&apos;&#65;&#x263A;<![CDATA[<raw>&amp;]]></a>");
  ASSERT_TRUE(root) << root.error().message;
  EXPECT_EQ(root->text, "<>&\"'A\xE2\x98\xBA<raw>&amp;");
}

TEST(XmlScan, TreeTrimsTextAndFindsPathsAndAttributes) {
  auto root = parse_xml(
      "<log>\n  <gpu id=\"X\">\n    <clocks>\n      <r>Not Active\n      </r>\n    </clocks>\n"
      "    <mig_devices>\n\t\t\tNone\n\t\t</mig_devices>\n  </gpu>\n</log>");
  ASSERT_TRUE(root) << root.error().message;
  const XmlElement* gpu = root->child("gpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->attribute("id").value_or(""), "X");
  EXPECT_FALSE(gpu->attribute("missing"));
  ASSERT_NE(root->find("gpu/clocks/r"), nullptr);
  EXPECT_EQ(root->find("gpu/clocks/r")->text, "Not Active");
  EXPECT_EQ(root->find("gpu/mig_devices")->text, "None");
  EXPECT_EQ(root->find("gpu/clocks/nope"), nullptr);
  EXPECT_EQ(root->find("gpu/clocks/r")->line, 4u);
}

TEST(XmlScan, EveryRealNvidiaSmiSampleParses) {
  for (const char* name : kSamples) {
    const std::string text = golden(name);
    ASSERT_FALSE(text.empty()) << name;
    auto root = parse_xml(text);
    ASSERT_TRUE(root) << name << ": " << root.error().message;
    EXPECT_EQ(root->name, "nvidia_smi_log") << name;
    EXPECT_NE(root->child("gpu"), nullptr) << name;
  }
}

// Each case: the input and a piece of the error text.
struct Bad {
  const char* xml;
  const char* says;
};

TEST(XmlScan, MalformedInputIsAnErrorNamingTheLine) {
  const Bad cases[] = {
      {"", "no root element"},
      {"   \n ", "no root element"},
      {"<a><b></a>", "does not match"},
      {"<a>\n<b>\n", "line 3"},
      {"<a>\n<b>", "<b> is not closed"},
      {"<a>&nbsp;</a>", "unknown entity &nbsp;"},
      {"<a>&#0;</a>", "invalid character reference"},
      {"<a>&#x110000;</a>", "invalid character reference"},
      {"<a>&amp</a>", "unterminated entity"},
      {"<a><!-- x </a>", "unterminated comment"},
      {"<a></a><b></b>", "a second root element"},
      {"<a></a>junk", "text after the root element"},
      {"junk<a></a>", "text before the root element"},
      {"</a>", "without an open element"},
      {"<a x=1></a>", "unquoted value"},
      {"<a x></a>", "has no '='"},
      {"<a x=\"1\" x=\"2\"></a>", "duplicate attribute x"},
      {"<a x=\"1></a>", "unterminated value"},
      {"<a", "unterminated tag <a"},
      {"<>", "expected an element name"},
      {"<a/ >", "stray '/'"},
      {"<a></a ", "malformed closing tag"},
      {"<a><![CDATA[x</a>", "unterminated CDATA"},
      {"<!DOCTYPE a", "unterminated declaration"},
      {"<a></a><!DOCTYPE a>", "after the root element"},
      {"<?xml version=\"1.0\"", "unterminated processing instruction"},
  };
  for (const auto& c : cases) {
    auto root = parse_xml(c.xml, "parse test");
    ASSERT_FALSE(root) << c.xml;
    EXPECT_NE(root.error().message.find(c.says), std::string::npos)
        << c.xml << " -> " << root.error().message;
    EXPECT_EQ(root.error().message.rfind("parse test: line ", 0), 0u) << root.error().message;
  }
}

TEST(XmlScan, NestingDeeperThanTheCapIsAnErrorNotARecursion) {
  std::string deep;
  for (int i = 0; i < 200000; ++i) deep += "<a>";
  auto root = parse_xml(deep);
  ASSERT_FALSE(root);
  EXPECT_NE(root.error().message.find("nested deeper than 64"), std::string::npos)
      << root.error().message;

  std::string ok;
  for (int i = 0; i < 64; ++i) ok += "<a>";
  ok += "x";
  for (int i = 0; i < 64; ++i) ok += "</a>";
  EXPECT_TRUE(parse_xml(ok));
  EXPECT_FALSE(parse_xml("<a><a><a></a></a></a>", "t", 2));
}

TEST(XmlScan, TheScannerStaysFailedAfterAnError) {
  XmlScanner s("<a></b>");
  ASSERT_TRUE(s.next());  // <a>
  EXPECT_FALSE(s.next());
  auto again = s.next();
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().message.find("earlier error"), std::string::npos);
}

TEST(XmlScan, EveryTruncationOfARealSampleIsAnError) {
  const std::string text = golden("nvidia-smi-qx_netdata-tesla-p100.xml");
  ASSERT_GT(text.size(), 1000u);
  // The document ends with "</nvidia_smi_log>\n": every shorter prefix that still has the start
  // of the root element must fail, whichever byte it stops at.
  const std::size_t end = text.rfind("</nvidia_smi_log>");
  for (std::size_t n = 0; n < end; n += 37)
    EXPECT_FALSE(parse_xml(std::string_view(text).substr(0, n))) << n;
  EXPECT_TRUE(parse_xml(std::string_view(text).substr(0, end + 17)));
}

}  // namespace
}  // namespace cmax::gputools
