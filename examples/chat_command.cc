// `kiln chat`: an interactive conversation in the terminal. The KV cache is
// kept between turns; /reset forgets the conversation; Ctrl-D (end of
// input) or /exit leaves.
#include <cstdio>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/strip.h"
#include "examples/commands.h"
#include "examples/flags.h"
#include "examples/run_setup.h"
#include "models/chat_session.h"

namespace kiln::cli {

int RunChat(const std::vector<std::string>& args) {
  int code = 0;
  std::optional<LoadedRun> run = LoadRun("kiln chat", &code);
  if (!run) return code;
  models::ChatOptions options;
  options.system_prompt = absl::GetFlag(FLAGS_system);
  options.sampling = SamplingFromFlags();
  options.max_reply_tokens = absl::GetFlag(FLAGS_max_tokens);
  options.replay_steps = absl::GetFlag(FLAGS_replay_steps);
  absl::StatusOr<models::ChatSession> chat =
      models::ChatSession::Create(*run->model, run->tokenizer, options);
  if (!chat.ok()) {
    std::fprintf(stderr, "kiln chat: %s\n", chat.status().ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "kiln chat: %s on %s; /reset starts afresh, Ctrl-D leaves.\n",
               absl::GetFlag(FLAGS_model).c_str(), run->device.ToString().c_str());
  std::string line;
  while (true) {
    std::fputs("> ", stderr);
    std::fflush(stderr);
    if (!std::getline(std::cin, line)) break;
    const std::string message(absl::StripAsciiWhitespace(line));
    if (message.empty()) continue;
    if (message == "/exit" || message == "/quit") break;
    if (message == "/reset") {
      chat->Reset();
      std::fputs("(conversation reset)\n", stderr);
      continue;
    }
    absl::StatusOr<models::ChatTurn> turn = chat->Say(message, [](absl::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    });
    std::fputs("\n", stdout);
    if (!turn.ok()) {
      std::fprintf(stderr, "kiln chat: %s\n", std::string(turn.status().message()).c_str());
      continue;
    }
    std::fprintf(stderr, "(%d tokens fed, %d generated, %.1f tokens/s)\n", turn->prompt_tokens,
                 turn->reply_tokens, turn->seconds > 0 ? turn->reply_tokens / turn->seconds : 0.0);
  }
  std::fputs("\n", stderr);
  return 0;
}

}  // namespace kiln::cli
