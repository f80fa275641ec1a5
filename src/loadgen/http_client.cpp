// http_client: see http_client.h
