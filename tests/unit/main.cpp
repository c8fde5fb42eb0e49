// SPDX-License-Identifier: Apache-2.0
// Catch2 main with a TAP reporter that emits ONE line per test case (Catch2's own TAP reporter
// counts assertions), so meson's summary shows how many tests passed and failed; and the test
// case that holds every other one to carrying the tag of what it tests, an applet or a layer
// (tests/README.md, One applet's tests), so `unit-tests '[dhcp]'` runs all of dhcp's.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

class CaseTapReporter : public Catch::StreamingReporterBase<CaseTapReporter> {
public:
    using StreamingReporterBase::StreamingReporterBase;
    static std::string getDescription() { return "TAP, one line per test case"; }

    void assertionStarting(Catch::AssertionInfo const&) override {}
    bool assertionEnded(Catch::AssertionStats const& stats) override {
        const auto& r = stats.assertionResult;
        if (!r.isOk()) {
            std::ostringstream line;
            line << r.getSourceInfo().file << ":" << r.getSourceInfo().line << ": " << r.getExpression();
            if (r.hasExpandedExpression()) line << " with " << r.getExpandedExpression();
            if (r.hasMessage()) line << " -- " << r.getMessage();
            for (auto& m : stats.infoMessages) line << " [" << m.message << "]";
            failures_.push_back(line.str());
        }
        return true;
    }
    void testCaseEnded(Catch::TestCaseStats const& stats) override {
        ++count_;
        bool ok = stats.totals.assertions.failed == 0;
        stream << (ok ? "ok " : "not ok ") << count_ << " - " << stats.testInfo.name << "\n";
        for (auto& f : failures_) {
            std::istringstream lines(f);
            for (std::string l; std::getline(lines, l);) stream << "# " << l << "\n";
        }
        failures_.clear();
        StreamingReporterBase::testCaseEnded(stats);
    }
    void testRunEnded(Catch::TestRunStats const& stats) override {
        stream << "1.." << count_ << "\n";
        StreamingReporterBase::testRunEnded(stats);
    }

private:
    int count_ = 0;
    std::vector<std::string> failures_;
};

}  // namespace

CATCH_REGISTER_REPORTER("casetap", CaseTapReporter)

namespace {

// Whether `word` is one of the space-separated `words`.
bool listed(std::string_view words, std::string_view word) {
    for (std::size_t at = 0; at <= words.size();) {
        std::size_t end = std::min(words.find(' ', at), words.size());
        if (words.substr(at, end - at) == word) return true;
        at = end + 1;
    }
    return false;
}

// The tags a test case may carry: an applet's name (meson.build's list), a layer of src/
// (docs/design.md's table, read by meson), or "tests" for this file's own case (tests/README.md,
// One applet's tests).
bool known_tag(std::string_view tag) {
    return listed(CNI_TEST_APPLETS, tag) || listed(CNI_TEST_LAYERS, tag) || tag == "tests";
}

}  // namespace

TEST_CASE("every test case carries the tag of an applet or a layer", "[tests]") {
    std::vector<std::string> untagged;
    for (const auto& test : Catch::getRegistryHub().getTestCaseRegistry().getAllTests()) {
        if (std::none_of(test.tags.begin(), test.tags.end(), known_tag))
            untagged.push_back(test.name + " (" + test.lineInfo.file + ":" + std::to_string(test.lineInfo.line) + ")");
    }
    for (const auto& name : untagged) UNSCOPED_INFO(name);
    CHECK(untagged.empty());
}
