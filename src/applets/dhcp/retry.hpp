// SPDX-License-Identifier: Apache-2.0
// When the DHCP client tries again, and what it says when it gives up (docs/dhcp.md: Retries).
// The schedule is RFC 2131 section 4.1's as the reference runs it: the first four attempts 2 s
// apart, then 4 s doubling up to -resendmax, each randomized by up to 1 s either way. Each
// attempt owns its slot of the schedule: one ended early by a NAK or a reply of the wrong type
// waits out the rest of it, so a server that refuses at once gets one DISCOVER and one REQUEST
// per slot, not a tight loop. An acquisition gives up after kMaxRefusals refused attempts, or
// when -resendtimeout leaves no room for the next slot; its error names what the servers did.
// Also how far the wall clock was set back between two wakes of a lease's thread. None reads the
// clock or touches the network, so the unit tests check them.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace cni::dhcp {

inline constexpr int kFastRetries = 4;   // attempts 2 s apart before the doubling starts
inline constexpr int kMaxRefusals = 4;   // refused attempts (NAKs, wrong replies) per acquisition
inline constexpr std::chrono::milliseconds kMaxJitter{1000}, kMinRetryDelay{500};

// How long attempt `attempt` (0 = the first DISCOVER) owns before the next one starts:
// 2 s for the first kFastRetries, then 4 s doubling, at most `resend_max`; plus `jitter`
// (clamped to +-kMaxJitter, drawn by the caller); never under kMinRetryDelay.
std::chrono::milliseconds retry_delay(int attempt, std::chrono::milliseconds resend_max, std::chrono::milliseconds jitter);

// The wall clock read `wall_before` and then, `steady_elapsed` later by the steady clock,
// `wall_now`: by how many seconds it was set back meanwhile (NTP stepping a clock that ran
// ahead), or 0 when it went back by no more than kClockSlack (rounding, slewing).
inline constexpr std::int64_t kClockSlack = 5;
std::int64_t clock_set_back(std::int64_t wall_before, std::int64_t wall_now, std::chrono::steady_clock::duration steady_elapsed);

// How an attempt that got no lease ended.
enum class Miss { no_offer, odd_reply, no_answer_to_request, nak };

// A server's text as one printable line (it reaches the log and the CNI error), cut short.
std::string printable(std::string text);

// What one acquisition's attempts met, for the log and for the error when it gives up.
class RetryTally {
public:
    void record(Miss m, std::uint32_t offered = 0, std::string nak_message = {});
    int attempts() const { return no_offer_ + odd_replies_ + unanswered_requests_ + naks_; }
    int refusals() const { return naks_ + odd_replies_; }
    // The last attempt, e.g. "the DHCP server NAKed the offered address 10.0.0.5 (\"in use\")".
    std::string last() const;
    // Every kind met, most telling first, e.g. "the DHCP server NAKed the offered address
    // 10.0.0.5 4 times (last: \"in use\")"; "; " between kinds.
    std::string summary() const;

private:
    std::string nak_text(int count) const;
    std::string offer_text(int count) const;

    int no_offer_ = 0, odd_replies_ = 0, unanswered_requests_ = 0, naks_ = 0;
    Miss last_ = Miss::no_offer;
    std::uint32_t offered_ = 0;  // the last address offered
    std::string nak_message_;    // the last NAK's option 56, made printable and cut short
};

}  // namespace cni::dhcp
