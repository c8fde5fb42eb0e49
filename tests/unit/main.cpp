// SPDX-License-Identifier: Apache-2.0
// Catch2 main with a TAP reporter that emits ONE line per test case (Catch2's own TAP reporter
// counts assertions), so meson's summary shows how many tests passed and failed.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <sstream>

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
