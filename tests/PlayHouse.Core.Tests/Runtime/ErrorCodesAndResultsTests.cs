using System.Reflection;
using PlayHouse.Core.Pooling;
using PlayHouse.Core.Runtime;

namespace PlayHouse.Core.Tests.Runtime;

/// <summary>
/// The names reports give error codes, and the outcomes handlers return: each code is described by its own name (an
/// unknown one by its number), and the results' factories and success tests say what they promise.
/// </summary>
public sealed class ErrorCodesAndResultsTests
{
    public static TheoryData<string, ushort> EveryCode()
    {
        var codes = new TheoryData<string, ushort>();
        foreach (var field in typeof(ErrorCodes).GetFields(BindingFlags.Public | BindingFlags.Static).Where(f => f.IsLiteral))
        {
            codes.Add(field.Name, (ushort)field.GetRawConstantValue()!);
        }

        return codes;
    }

    [Theory]
    [MemberData(nameof(EveryCode))]
    public void Describe_NamesEachCode_ByItsConstantsName(string name, ushort code)
    {
        Assert.Equal(name, ErrorCodes.Describe(code));
    }

    [Fact]
    public void Describe_OfAnUnknownCode_IsItsNumber_AndEveryKnownCodeIsDistinct()
    {
        var codes = EveryCode().Select(row => (ushort)row[1]).ToList();

        Assert.Equal("59999", ErrorCodes.Describe(59_999));
        Assert.Equal("65535", ErrorCodes.Describe(ushort.MaxValue));
        Assert.Equal(25, codes.Count);
        Assert.Equal(codes.Count, codes.Distinct().Count());
    }

    [Fact]
    public void Response_IsSuccessOnlyForCodeZero_AndDescribesItselfByMsgIdCodeAndLength()
    {
        var pool = new MessagePool();
        using var ok = new Response(ErrorCodes.Success, "Reply", pool.Copy([1, 2, 3], "test"));
        var failed = Response.Error(ErrorCodes.StageFull, "Join");

        Assert.True(ok.IsSuccess);
        Assert.False(failed.IsSuccess);
        Assert.Equal("Response(Reply, Success, 3 B)", ok.ToString());
        Assert.Equal("Response(Join, StageFull, 0 B)", failed.ToString());
        Assert.Equal(0, failed.Payload.Length);
    }

    [Fact]
    public void Packet_SaysWhetherItIsARequest_InItsDescription()
    {
        var pool = new MessagePool();
        using var payload = pool.Copy([1, 2, 3, 4, 5], "test");
        var oneWay = new Packet("Chat", payload);
        var request = new Packet("Echo", Payload.Empty, ReplyToken.ToMesh(7, "Echo", "play-1", 3, stageId: 9));

        Assert.False(oneWay.IsRequest);
        Assert.True(request.IsRequest);
        Assert.Equal("Packet(Chat, 5 B)", oneWay.ToString());
        Assert.Equal("Packet(Echo, 0 B, request)", request.ToString());
    }

    [Fact]
    public void CreateAndAuthenticateResults_SucceedWithCodeZero_AndRefuseWithTheirDefaultCodes()
    {
        var created = CreateResult.Success("Created");
        var refusedCreate = CreateResult.Refuse();
        var authenticated = AuthenticateResult.Success(accountId: 42, "Welcome");
        var refusedAuthentication = AuthenticateResult.Refuse();

        Assert.Equal(new CreateResult(true, ErrorCodes.Success, "Created", default), created);
        Assert.Equal(new CreateResult(false, ErrorCodes.CreateStageFailed, string.Empty, default), refusedCreate);
        Assert.Equal(new AuthenticateResult(true, 42, ErrorCodes.Success, "Welcome", default), authenticated);
        Assert.Equal(new AuthenticateResult(false, 0, ErrorCodes.AuthenticationFailed, string.Empty, default), refusedAuthentication);
    }

    [Fact]
    public void OffStageResult_SucceedsOnlyWithoutAnErrorAndWithCodeZero()
    {
        Assert.True(new OffStageResult<int>(1, null, ErrorCodes.Success).IsSuccess);
        Assert.False(new OffStageResult<int>(0, new InvalidOperationException("work failed"), ErrorCodes.Success).IsSuccess);
        Assert.False(new OffStageResult<int>(0, null, ErrorCodes.HandlerFailed).IsSuccess);
    }

    [Theory]
    [InlineData(false, 0UL, false, false)]
    [InlineData(false, 1UL, false, true)]
    [InlineData(true, 0UL, false, false)]
    [InlineData(true, 1UL, true, false)]
    public void MeshMessage_IsARequestOrAReplyFrame_OnlyWithASequence(bool isReply, ulong msgSeq, bool replyFrame, bool request)
    {
        var message = new MeshMessage { IsReply = isReply, MsgSeq = msgSeq, MsgId = "Echo", From = "api-1" };

        Assert.Equal(replyFrame, message.IsReplyFrame);
        Assert.Equal(request, message.IsRequest);
    }

    [Fact]
    public void MeshMessage_DescribesItsSenderKindIdSequenceStageAndCode()
    {
        var message = new MeshMessage { From = "play-1", MsgId = "Echo", MsgSeq = 5, StageId = 9, ErrorCode = ErrorCodes.StageFull };
        var reply = message with { IsReply = true };

        Assert.Equal("Mesh(play-1->msg Echo seq=5 stage=9 err=60023 0 B)", message.ToString());
        Assert.Equal("Mesh(play-1->reply Echo seq=5 stage=9 err=60023 0 B)", reply.ToString());
    }
}
