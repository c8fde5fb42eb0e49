// SPDX-License-Identifier: Apache-2.0
// The retry schedule and the tally of missed attempts (see retry.hpp).
#include "applets/dhcp/retry.hpp"

#include <algorithm>

#include "applets/dhcp/message.hpp"

namespace cni::dhcp {
namespace {

using namespace std::chrono_literals;

constexpr std::size_t kMaxNakText = 64;

std::string counted(int n, std::string_view one, std::string_view many) {
    return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

}  // namespace

std::string printable(std::string text) {
    for (char& c : text)
        if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') c = '?';
    if (text.size() > kMaxNakText) text = text.substr(0, kMaxNakText) + "...";
    return text;
}

std::chrono::milliseconds retry_delay(int attempt, std::chrono::milliseconds resend_max, std::chrono::milliseconds jitter) {
    std::chrono::milliseconds base = 2s;
    if (attempt >= kFastRetries) base = std::min<std::chrono::milliseconds>(4s * (1 << std::min(attempt - kFastRetries, 10)), resend_max);
    return std::max(base + std::clamp(jitter, -kMaxJitter, kMaxJitter), kMinRetryDelay);
}

std::int64_t clock_set_back(std::int64_t wall_before, std::int64_t wall_now, std::chrono::steady_clock::duration steady_elapsed) {
    std::int64_t back = wall_before + std::chrono::duration_cast<std::chrono::seconds>(steady_elapsed).count() - wall_now;
    return back > kClockSlack ? back : 0;
}

void RetryTally::record(Miss m, std::uint32_t offered, std::string nak_message) {
    last_ = m;
    if (offered) offered_ = offered;
    switch (m) {
    case Miss::no_offer: ++no_offer_; break;
    case Miss::odd_reply: ++odd_replies_; break;
    case Miss::no_answer_to_request: ++unanswered_requests_; break;
    case Miss::nak:
        ++naks_;
        nak_message_ = printable(std::move(nak_message));
        break;
    }
}

std::string RetryTally::nak_text(int count) const {
    std::string s = "the DHCP server NAKed the offered address " + v4(offered_).str();
    if (count > 1) s += " " + std::to_string(count) + " times";
    if (nak_message_.empty()) return s;
    return s + (count > 1 ? " (last: \"" : " (\"") + nak_message_ + "\")";
}

std::string RetryTally::offer_text(int count) const {
    return "the DHCP server offered " + v4(offered_).str() + " but did not answer " +
           (count == 1 ? std::string("the REQUEST") : counted(count, "REQUEST", "REQUESTs"));
}

std::string RetryTally::last() const {
    switch (last_) {
    case Miss::no_offer: return "no DHCP server answered the DISCOVER";
    case Miss::odd_reply: return "a DHCP reply of the wrong type (not an OFFER to a DISCOVER, nor an ACK or NAK to a REQUEST)";
    case Miss::no_answer_to_request: return offer_text(1);
    case Miss::nak: return nak_text(1);
    }
    return {};
}

std::string RetryTally::summary() const {
    std::string out;
    auto add = [&](std::string part) { out += (out.empty() ? "" : "; ") + part; };
    if (naks_) add(nak_text(naks_));
    if (odd_replies_)
        add(counted(odd_replies_, "DHCP reply", "DHCP replies") +
            " of the wrong type (not an OFFER to a DISCOVER, nor an ACK or NAK to a REQUEST)");
    if (unanswered_requests_) add(offer_text(unanswered_requests_));
    if (no_offer_) add("no DHCP server answered " + counted(no_offer_, "DISCOVER", "DISCOVERs"));
    return out;
}

}  // namespace cni::dhcp
