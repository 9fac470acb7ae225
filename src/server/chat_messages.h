/* chat_messages.h — chat messages as clients send them, turned into what the chat template sees,
 * the way vLLM's chat_utils prepares them for transformers' apply_chat_template:
 *   - content as a list of parts: the text parts (and bare strings) joined with "\n"; image,
 *     audio, video and file parts are refused (this server runs text-only models), naming the part;
 *   - content null or absent: "" (an assistant turn that only called tools);
 *   - assistant tool_calls: each function.arguments sent as a JSON string is parsed to an object
 *     (null or "" becomes {}), as templates iterate over argument keys;
 *   - role "tool" keeps tool_call_id, any message keeps a string name; other keys are dropped.
 * Errors are 400s whose param names the message field at fault. */
#ifndef QS_SERVER_CHAT_MESSAGES_H
#define QS_SERVER_CHAT_MESSAGES_H

#include <cJSON.h>

#include "server/api_error.h"

/* *out: a new array (caller frees with cJSON_Delete). */
int qs_chat_messages_for_template(const cJSON *messages, cJSON **out, qs_api_error *e);

#endif
