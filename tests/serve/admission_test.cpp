// vsynth serve's admission (tools/vsynth/serve/admission.h): the config file, key -> tenant in
// constant time, bounded queues that refuse at once, priority order.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "tools/vsynth/serve/admission.h"

using namespace vsynth::serve;
using clock_type = std::chrono::steady_clock;

namespace {

const char* kConfig = R"(
server: { max_running: 1 }
priorities: [gold, silver, bronze]
tenants:
  acme:  { keys: ["sk-acme-000001", "sk-acme-000002"], priority: gold, max_concurrent: 1, queue_depth: 1 }
  small: { keys: ["sk-small-00001"], priority: bronze, max_concurrent: 1, queue_depth: 2 }
)";

}  // namespace

TEST_CASE("the serve config gives tenants keys and priorities and its errors name the key and line",
          "[serve][admission]") {
  const ServeConfig c = parse_config(kConfig, "serve.yaml");
  REQUIRE(c.tenants.size() == 2);
  CHECK(c.tenants[0].rank == 0);
  CHECK(c.tenants[1].rank == 2);
  CHECK_FALSE(c.anonymous);
  CHECK(c.max_running == 1);
  const auto error = [](const std::string& yaml) {
    try {
      parse_config(yaml, "serve.yaml");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("<accepted>");
  };
  CHECK_THAT(error("tenants: { a: { keys: [\"sk-aaaaaaaa\"], priorty: gold } }"),
             Catch::Contains("unknown key `priorty`") && Catch::Contains("serve.yaml:1:"));
  CHECK_THAT(error("tenants: { a: { keys: [\"sk-aaaaaaaa\"], priority: platinum } }"),
             Catch::Contains("platinum"));
  CHECK_THAT(error("tenants: { a: { priority: gold } }"), Catch::Contains("needs `keys`"));
  CHECK_THAT(error("tenants: { a: { keys: [\"short\"] } }"), Catch::Contains("shorter than 8"));
  CHECK_THAT(error("anonymous: { max_concurrent: 0 }"), Catch::Contains("max_concurrent"));
  CHECK_THAT(error("server: { max_running: 2 }"), Catch::Contains("nobody could send"));
  CHECK(error("anonymous: {}") == "<accepted>");
}

TEST_CASE("keys name their tenant and unknown or missing keys (no anonymous tenant) name none",
          "[serve][admission]") {
  Admission a(parse_config(kConfig, "serve.yaml"));
  REQUIRE(a.tenant_for("sk-acme-000002"));
  CHECK(a.tenant_for("sk-acme-000002")->name == "acme");
  CHECK(a.tenant_for("sk-small-00001")->name == "small");
  CHECK(a.tenant_for("sk-acme-00000") == nullptr);  // a prefix of a key
  CHECK(a.tenant_for("sk-acme-0000011") == nullptr);
  CHECK(a.tenant_for("") == nullptr);
  CHECK(constant_time_equal("abc", "abc"));
  CHECK_FALSE(constant_time_equal("abc", "abd"));
  CHECK_FALSE(constant_time_equal("abc", "abcd"));
  Admission anon(default_config());
  REQUIRE(anon.tenant_for(""));
  CHECK(anon.tenant_for("")->name == "anonymous");
}

TEST_CASE("a tenant's full queue is refused at once with a Retry-After", "[serve][admission]") {
  Admission a(parse_config(kConfig, "serve.yaml"));
  const TenantConfig& acme = *a.tenant_for("sk-acme-000001");
  const auto far = clock_type::now() + std::chrono::seconds(30);
  Admission::Outcome first = a.acquire(acme, far, nullptr);
  REQUIRE(first.ticket);
  // acme may hold 1 running + 1 waiting: the waiter sits in the queue (on a thread), the
  // third is refused without waiting.
  std::atomic<bool> second_admitted{false};
  std::thread waiter([&] {
    Admission::Outcome o = a.acquire(acme, far, nullptr);
    second_admitted = static_cast<bool>(o.ticket);
  });
  while (a.load().waiting == 0) std::this_thread::yield();
  Admission::Outcome third = a.acquire(acme, far, nullptr);
  CHECK_FALSE(third.ticket);
  CHECK(third.status == 429);
  CHECK(third.retry_after >= 1);
  CHECK_THAT(third.reason, Catch::Contains("acme"));
  first = Admission::Outcome{};  // frees the slot: the waiter runs
  waiter.join();
  CHECK(second_admitted);
  CHECK(a.load().running == 0);
}

TEST_CASE("a waiter past its deadline gives up and a freed slot goes to the higher priority",
          "[serve][admission]") {
  Admission a(parse_config(kConfig, "serve.yaml"));
  const TenantConfig& acme = *a.tenant_for("sk-acme-000001");
  const TenantConfig& small = *a.tenant_for("sk-small-00001");
  const auto far = clock_type::now() + std::chrono::seconds(30);
  auto held = std::make_unique<Admission::Outcome>(a.acquire(small, far, nullptr));
  REQUIRE(held->ticket);
  const Admission::Outcome late = a.acquire(small, clock_type::now(), nullptr);
  CHECK_FALSE(late.ticket);
  CHECK(late.status == 504);

  // small (bronze) queues first, acme (gold) second; the slot (max_running 1) goes to acme.
  std::atomic<int> order{0};
  std::atomic<int> small_got{0}, acme_got{0};
  std::thread ts([&] {
    Admission::Outcome o = a.acquire(small, far, nullptr);
    small_got = ++order;
  });
  while (a.load().waiting < 1) std::this_thread::yield();
  std::thread ta([&] {
    Admission::Outcome o = a.acquire(acme, far, nullptr);
    acme_got = ++order;
  });
  while (a.load().waiting < 2) std::this_thread::yield();
  held.reset();
  ts.join();
  ta.join();
  CHECK(acme_got == 1);
  CHECK(small_got == 2);
}

TEST_CASE("the example config (examples/serve/serve.yaml) loads", "[serve][admission]") {
  const ServeConfig c = load_config(std::string(VSYNTH_SOURCE_DIR) + "/examples/serve/serve.yaml");
  CHECK(c.tenants.size() == 3);
  REQUIRE(c.anonymous);
  CHECK(c.anonymous->max_tokens == 64);
  Admission a(c);
  REQUIRE(a.tenant_for("sk-vsynth-gold-change-me"));
  CHECK(a.tenant_for("sk-vsynth-gold-change-me")->name == "ide-team");
}
