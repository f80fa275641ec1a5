#pragma once
// A `cmax endpoint serve --listen 127.0.0.1:0` started for one test: waits for the printed URL and
// reads the port from it. Shared by test_endpoint_serve.cpp and test_endpoint_openai.cpp.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/daemon.h"
#include "support/temp_host.h"

namespace cmax::test {

class ServeProcess {
 public:
  /// Starts the server with `extra` flags after the listen address; port() is 0 when it did not come up.
  explicit ServeProcess(std::vector<std::string> extra = {}) {
    log_ = dir_.dir() / "serve.log";
    std::vector<std::string> argv = {CMAX_BIN, "endpoint", "serve", "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto d = Daemon::start(argv, {}, log_);
    if (!d) {
      error_ = d.error().message;
      return;
    }
    daemon_.emplace(std::move(*d));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    const std::string marker = "listening on http://127.0.0.1:";
    while (std::chrono::steady_clock::now() < deadline && daemon_->running()) {
      const auto text = log();
      if (auto at = text.find(marker); at != std::string::npos) {
        port_ = std::atoi(text.c_str() + at + marker.size());
        if (port_ > 0) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    error_ = "cmax endpoint serve printed no URL within 10 s:\n" + log();
  }

  int port() const { return port_; }
  const std::string& error() const { return error_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  const std::filesystem::path& dir() const { return dir_.dir(); }
  bool running() { return daemon_ && daemon_->running(); }
  std::string log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

 private:
  TempHost dir_;
  std::filesystem::path log_;
  std::optional<Daemon> daemon_;
  int port_ = 0;
  std::string error_;
};

}  // namespace cmax::test
