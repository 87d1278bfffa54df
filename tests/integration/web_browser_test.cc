// The dashboard in a real browser: headless Chromium loads the page from a
// server on a simulated host, shows the GPUs' states, picks up a `reserve`
// by itself, and shows a note full of markup as text. A screenshot is left
// in the build tree for humans (tests/artifacts/dashboard.png).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "integration/cdp_browser.h"
#include "integration/web_fixture.h"

namespace canhazgpu::testing {
namespace {

using nlohmann::json;

class WebBrowserTest : public WebTest {};

TEST_F(WebBrowserTest, PageShowsLiveStateAndEscapesUserText) {
  std::optional<std::string> chromium = CdpBrowser::Find();
  if (!chromium) {
    const char* ci = std::getenv("CI");
    ASSERT_FALSE(ci != nullptr && std::string(ci) == "true") << "CI needs chromium installed";
    GTEST_SKIP() << "no chromium on PATH (scripts/setup.sh installs it)";
  }
  CdpBrowser browser(*chromium, host_.dir() + "/chromium-profile");
  ASSERT_TRUE(browser.started());
  ASSERT_TRUE(browser.Open("http://127.0.0.1:" + std::to_string(port_) + "/"));
  auto count = [&](const std::string& state) {
    json n = browser.Evaluate("document.querySelectorAll('#gpus .card[data-state=\"" + state +
                              "\"]').length");
    return n.is_number() ? n.get<int>() : -1;
  };
  ASSERT_TRUE(Eventually([&] { return count("AVAILABLE") == 4; }));

  const std::string note = "<script>window.pwned=1</script><img src=x onerror=\"window.pwned=2\">";
  ASSERT_EQ(host_.Run({"reserve", "-g", "1", "--note", note}).exit_code, 0);
  // No reload: the page's own refresh shows it.
  ASSERT_TRUE(Eventually([&] { return count("IN_USE") == 1 && count("AVAILABLE") == 3; }));
  EXPECT_EQ(browser.Evaluate("document.querySelector('#gpus .card[data-state=\"IN_USE\"] .note')"
                             ".textContent"),
            note);
  EXPECT_EQ(browser.Evaluate("document.querySelectorAll('#gpus script, #gpus img').length"), 0);
  EXPECT_EQ(browser.Evaluate("typeof window.pwned"), "undefined");
  // Choosing another period reloads the report from /api/report.
  browser.Evaluate(
      "const d = document.getElementById('days'); d.value = '1'; "
      "d.dispatchEvent(new Event('change')); true");
  EXPECT_TRUE(Eventually([&] {
    json rows = browser.Evaluate("document.querySelectorAll('#report .row').length");
    return rows.is_number() && rows.get<int>() == 1;
  }));

  std::string png = browser.Screenshot();
  EXPECT_EQ(png.substr(1, 3), "PNG");
  mkdir(TEST_ARTIFACTS_DIR, 0755);
  std::ofstream(std::string(TEST_ARTIFACTS_DIR) + "/dashboard.png", std::ios::binary) << png;
}

}  // namespace
}  // namespace canhazgpu::testing
