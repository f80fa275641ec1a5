# cmax endpoint serve's sources (the OpenAI-compatible server over the fleet model), compiled into
# cmax_endpoint by src/endpoint/CMakeLists.txt; cpp-httplib is linked there, privately.
set(CMAX_ENDPOINT_SERVE_SOURCES openai_tokenize.cpp openai_protocol.cpp anthropic_protocol.cpp openai_server.cpp worker_api.cpp)
